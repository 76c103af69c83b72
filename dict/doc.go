// Package dict is a dictionary in a zone file that every process of a host
// maps: the semantics of nginx's ngx.shared.DICT (typed values with flags,
// atomic increments, add, compare-and-swap, lazy TTL, eviction of the least used, lists) for
// Go programs that run as several OS processes.
//
// The zone is split into shards (shm). A key's xxhash64 with the zone's seed
// picks its shard by its low bits, a bucket of the shard's index by its high
// bits, and an 8-bit tag compared before the key bytes. Each shard has one
// lock word, an index of uint32 offsets, an eviction queue (CLOCK), and a slab arena
// holding entries (layout.go). Operations on different shards never contend.
//
// Eviction is CLOCK (second chance) per shard, chosen over exact LRU for
// read speed: a read only sets a bit in the entry it already holds, where an
// LRU move writes three other entries' cache lines (at 1,000 keys that move
// cost a third of a Get). Entries sit in a queue, new ones at the head,
// unreferenced; reads and writes set the entry's refBit. When an allocation
// fails the shard reclaims from the queue's tail: expired entries are freed,
// a referenced entry loses its bit and moves to the head, and an unreferenced
// live entry is evicted — in up to 30 rounds of up to 3 freed entries
// (nginx's bound). So an entry used since the hand last passed outlives one
// that was not, and with Shards: 1 the zone has one eviction order. Keys
// lists each shard's queue from the tail: oldest and least used first.
//
// Invariants:
//
//	I1. Every entry of a shard is in exactly one bucket chain (the one its hash
//	    names) and in the eviction queue (the eviction queue of layout.go), once;
//	    Count is their number.
//	I2. An entry occupies one slab chunk of exactly ChunkSize(entrySize(key,
//	    value)) bytes; a list's nodes are chunks reachable only from its header.
//	I3. A failed write leaves the key's old value in place.
//	I4. An entry is expired iff its expiry is non-zero and now >= expiry;
//	    expired entries are invisible to reads but for GetStale.
//	I5. Every link read from the zone is bounds-checked before it is followed,
//	    and every walk is bounded: a corrupt zone yields ErrCorrupt, never a
//	    fault or an endless loop.
//	I6. Drop is dropNone outside multi-step mutations. While one runs it names
//	    what a repair must drop: the entry being written, or, during an
//	    allocation, every entry the index does not reach. A process that dies
//	    holding a shard's lock loses at most that entry; the next locker
//	    rebuilds the shard (repair.go). An increment of a live integer is one
//	    aligned store and is never lost or half done.
//
// User code: Update and Mutate call the caller's fn with the shard's lock
// held and a view of the zone: Update's cur aliases the entry's value, and
// Mutate's b is the value itself. Every slice of zone memory the package
// hands out, there or in a returned Value, is capped (s[i:j:j]), so an
// append to it copies instead of writing over the next entry. If fn panics
// or calls runtime.Goexit, the operation is undone before the panic goes on,
// unrecovered, to the caller: Update has written nothing yet, Mutate puts a
// found entry's bytes back and removes a new entry; then the lock is
// released. The zone stays sound and the process may go on using it.
//
// Concurrency: a *Dict is safe for use by many goroutines; Close must not race
// with other calls. Across processes, every operation on a key is atomic under
// its shard's lock; a read sees the last completed write of any process. A
// lock holder that is alive, in any PID namespace, is never taken over:
// liveness is the kernel's (an OFD lock per open zone, package shm), never a
// pid's. No operation waits forever: one that waited Options.LockTimeout
// (DefaultLockTimeout, 1 s) for a lock a live process holds returns
// ErrLockTimeout and changes nothing, and a lock whose holder died is taken
// over after a few milliseconds whatever the timeout. The clock is read only
// for entries that have or get a TTL, from a coarse per-process clock
// (clock.go) unless Options.Clock injects one: a goroutine stores the time
// every millisecond while the clock is read, and stops once it has gone
// unread for 100 to 200 ms, so that an idle process does not wake; the first
// read after that takes the system's time and restarts it. Read-only views
// take no locks (see Options.ReadOnly) and hold no owner slot.
package dict
