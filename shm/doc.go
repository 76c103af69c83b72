// Package shm creates and attaches zone files: fixed-size regular files that
// unrelated OS processes map MAP_SHARED, with a validated header and
// crash-recoverable cross-process locks.
//
// A zone is laid out as a header page followed by equally sized shards (see
// layout.go). This package knows nothing of what a shard holds: the layer
// above formats shards through Options.Format when the zone is created, and
// names its own layout with Options.Layout so that a zone written by another
// layout is refused.
//
// Invariants:
//
//	I1. The header is written last when a zone is created, under flock(LOCK_EX):
//	    a file whose header is valid is fully formatted.
//	I2. Open validates magic, then version and byte order, then the checksum,
//	    then the geometry against the file size, before any offset is trusted
//	    (ParseHeader).
//	I3. Every byte of the file is allocated when it is created (fallocate), so a
//	    mapped page never faults with SIGBUS for lack of backing store.
//	I4. The header is immutable after create; the file stores offsets, never
//	    pointers.
//	I5. A lock word holds 0 or its owner: a pid and that process's start-time
//	    token (lock.go). A waiter that finds the owner dead takes the lock over
//	    and is told so, and must repair what the lock protects before using it.
//
// Concurrency: a *Zone may be used by many goroutines at once; Close must not
// race with other use. Across processes, any number may attach the same file;
// creation is serialised by flock, and mutation of shared words is governed by
// the lock words the layer above places in its shards (Lock, Unlock).
package shm
