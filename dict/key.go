package dict

import (
	"time"

	"github.com/shmzone/shmzone/internal/keyhash"
)

// A Key is a key and its hash, for the operations whose names end in Key.
// KeyOf makes one. Those operations do what the operation of the same name
// does with the key's string, but do not hash it. The zero Key is the
// empty key, which every operation refuses.
type Key struct {
	s    string
	h    uint64
	seed uint64 // the hash's seed: the zone's
}

// KeyOf returns the key prefix+name as a Key for d. It joins prefix and
// name in buf when they fit, and in a new string otherwise. A Key joined
// in buf holds buf's bytes, so it stays good while buf is unchanged.
//
// KeyOf hashes prefix and name where they lie, not the joined bytes. A
// processor loading bytes it has just stored waits for the stores, and
// hashing a key just joined loads every byte of it. A caller that keeps
// keys in namespaces, as package limiter does, so builds its keys without
// that wait.
func (d *Dict) KeyOf(buf []byte, prefix, name string) Key {
	n := len(prefix) + len(name)
	var s string
	if n <= len(buf) {
		copy(buf[copy(buf, prefix):n], name)
		s = bytesString(buf[:n])
	} else {
		s = prefix + name
	}
	return Key{s: s, h: keyhash.Sum2(d.seed, prefix, name), seed: d.seed}
}

// String returns the key.
func (k Key) String() string { return k.s }

// hashOf returns k's hash in d: the one KeyOf computed, or the key hashed
// again for a Key that another zone made.
func (d *Dict) hashOf(k Key) uint64 {
	if k.seed != d.seed {
		return hashKey(d.seed, k.s)
	}
	return k.h
}

// IncrInitNumTTLKey is IncrInitNumTTL of k.
func (d *Dict) IncrInitNumTTLKey(k Key, delta, init int64, initTTL time.Duration) (sum float64, ttl time.Duration, out Outcome, err error) {
	return d.incrInitNumTTL(k.s, d.hashOf(k), delta, init, initTTL)
}

// ReviseKey is Revise of k.
func (d *Dict) ReviseKey(k Key, size int, fn ReviseFunc) (out Outcome, err error) {
	return d.reviseBytes(k.s, d.hashOf(k), size, fn)
}

// ReviseIntKey is ReviseInt of k.
func (d *Dict) ReviseIntKey(k Key, fn func(n int64, found bool) (next int64, store bool, ttl time.Duration)) (out Outcome, err error) {
	return d.reviseInt(k.s, d.hashOf(k), fn)
}
