package dict

// What the external tests (package dict_test) reach inside a Dict; it exists
// only in test builds.

// ShardLock returns the lock word in the zone of shard i of a writable d,
// which the crash tests hold in a helper process and inspect once it is
// killed.
func ShardLock(d *Dict, i int) *uint64 { return &d.shards[i].h.Lock }

// ShardOf returns the shard that holds key.
func ShardOf(d *Dict, key string) int { return int(hashKey(d.seed, key) & d.mask) }
