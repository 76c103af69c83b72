// Package dict is a dictionary in a zone file that every process of a host
// maps. It gives Go programs of several OS processes the semantics of
// nginx's ngx.shared.DICT. Values are typed and carry flags. Keys expire,
// and a full zone evicts the least used.
//
// The zone is split into shards. Each has a lock, an index, an eviction
// queue and a slab arena of entries (layout.go). Eviction is CLOCK in two
// segments per shard. A key used again is protected from a flood of new
// keys. DESIGN.md gives the reasons and the mechanism.
//
// # Differences from ngx.shared.DICT
//
//   - The zone is a file, and it outlives its processes.
//   - Numbers are int64 or float64, not doubles. An int's Incr wraps.
//   - An absent key is ErrNotFound, not nil.
//   - Storing the zero Value is ErrBadValue. nginx's set of nil deletes.
//   - A value too large for any shard is refused before anything is
//     evicted. nginx evicts, then fails with "no memory" and forcible true.
//   - TTL of an expired key not yet reclaimed is ErrNotFound. nginx
//     returns a negative time.
//   - Expire of an expired key is ErrNotFound. nginx's expire revives it.
//   - A TTL under 1 ms lasts 1 ms. nginx's never expires.
//   - A read marks its entry used and moves nothing. nginx keeps one LRU.
//   - FlushAll frees every entry. nginx's marks them expired.
//   - Keys(0) lists every key, oldest first. nginx's get_keys lists 1024
//     by default, newest first.
//   - FreeSpace counts the free chunks of partly used pages too.
//   - A list element may be a bool.
//   - Reads take no lock. A write locks one shard, not the whole zone.
//   - Lock waits are bounded. A dead holder's shard is repaired.
//   - Added: Update, Mutate, CompareAndSwap, Scan, KeysWithPrefix, Check,
//     Repair and more.
//
// # Invariants
//
//	I1. Each entry of a shard is in one bucket chain and once in the queue.
//	I2. An entry occupies one chunk of ChunkSize(entrySize(key, value)).
//	I3. A failed write leaves the key's old value in place.
//	I4. An entry is expired iff its expiry is non-zero and now >= expiry.
//	I5. Every link read is bounds-checked and every walk bounded. A corrupt
//	    zone yields ErrCorrupt, never a fault or a hang.
//	I6. A process that dies holding a shard's lock loses at most the entry
//	    that Drop names.
//	I7. Seq is odd exactly while the shard's Lock is held.
//	I8. An entry's value, Ver and Flags change only under its page's lock,
//	    or under Lock after a drain of the page.
//	I9. A free page's first word is slab.FreeWord. No lock's CAS takes it.
//	I10. The queue's first ProtCount entries, and only they, are protected.
//
// DESIGN.md, section 9, states each in full.
//
// # Concurrency
//
// A *Dict is safe for use by many goroutines. Close must not race with
// other calls.
//
// Across processes, every operation on a key is atomic. A read sees the
// last completed write of any process. A wait for a lock that a live
// process holds ends after Options.LockTimeout with ErrLockTimeout. A dead
// holder's lock is taken over within milliseconds. Read-only views take no
// lock.
//
// Update and Mutate call fn with a lock held. fn must be short and must not
// call the Dict. If fn panics, the operation is undone. Slices of zone
// memory the package hands out are capped, so an append copies.
package dict
