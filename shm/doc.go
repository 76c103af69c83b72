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
// What Open writes: a zone is created in an absent file, in an empty file,
// or in one that holds the marker of a creation this package began and did
// not finish: the header of the intended zone under the magic "SHMZINIT",
// checksummed, in a file no larger than the size it names. Every other file
// that is not a zone, whatever its size and even if its first bytes are
// zero, is refused with ErrNotZone and left byte for byte. A file Open would
// create a zone in must belong to the effective uid, root included (root
// adopting another user's file would leave it that user's to write), and be
// writable by group or others only if Options.Perm lets them; otherwise
// ErrNotOwner. An empty file is adopted because formatting it destroys no
// byte, and because a creator's O_CREAT and its flock are two steps: another
// Open may lock the new file first and must then create the zone itself.
// A creation that fails removes the file when its own O_EXCL made it, and
// otherwise leaves it empty or holding the marker, as it was found; an Open
// waiting on the removed file finds the path no longer names it and opens
// it anew.
//
// Invariants:
//
//	I1. A creator, under flock(LOCK_EX), first writes the marker, then
//	    allocates, formats and writes the header last, replacing the marker:
//	    a file whose header is valid is fully formatted, and a file whose
//	    creation died midway holds the marker, which only a creating Open
//	    finishes.
//	I2. Open validates magic, then version and byte order, then the checksum,
//	    then the geometry against the file size, before any offset is trusted
//	    (ParseHeader).
//	I3. Every byte of the file is allocated when it is created (fallocate),
//	    and when it is attached read-write (a sparse copy is allocated, or
//	    refused with ErrNoSpace), so a mapped page of a writer never faults
//	    for lack of backing store. A fault that still happens (a read-only
//	    mapping of a sparse file, a file truncated while mapped) becomes
//	    ErrFault in code guarded by GuardFaults and CatchFault: Format,
//	    dict.Open and every shmctl verb. The operations of the layer above
//	    are not guarded: a defer, a recover and two SetPanicOnFault calls
//	    would be a large share of an operation's cost.
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
