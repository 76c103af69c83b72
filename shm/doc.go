// Package shm creates and attaches zone files. A zone file is a regular
// file of fixed size that unrelated processes map MAP_SHARED. It has a
// validated header, and cross-process locks that a waiter can take over
// from a holder that crashed.
//
// A zone is a header page followed by shards of equal size (layout.go).
// This package knows nothing of what a shard holds. The layer above
// formats the shards through Options.Format when the zone is created. It
// names its layout with Options.Layout, so that a zone of another layout
// is refused.
//
// # Creating a zone
//
// Open creates a zone in an absent file, in an empty file, or in a file
// that holds the marker of an unfinished creation. Open refuses every
// other file that is not a zone with ErrNotZone. It leaves such a file
// byte for byte as it was.
//
// A file that Open would create a zone in must belong to the effective
// uid, root included. Group and others may write it only if Options.Perm
// lets them. Otherwise Open returns ErrNotOwner.
//
// An Open that may not create, because it has no Size or is ReadOnly, may
// find the file empty. It then waits briefly for a creator to begin the
// zone. A creation that fails leaves the file as it found it, or removes
// the file if it made it. DESIGN.md, section 1, gives the details.
//
// # Lock owners
//
// Processes take a lock word in the zone with a CAS. It names its owner by an owner slot and the slot's generation, not by a
// pid. A read-write Zone holds one slot of the header page's slot table
// for as long as it is open. The kernel releases the slot when the
// process dies. A read-only Zone holds no slot, and writes no lock word.
//
// A waiter checks the owner for life after a few milliseconds. A dead
// owner's word is taken over, with LockRecovered. The zone's own word is
// live, unless the caller tracks its goroutines' holds with Holders or
// LockWithinAsking. Two zones of one process on one file are two owners.
//
// OwnerTag names an owner in 32 bits, for marks where a lock word does not
// fit. TagReplaced and TagGone judge a tag. Neither ever judges an open
// zone's tag gone.
//
// At most Slots zones can be open read-write on one file at once. The next
// Open returns ErrNoSlot. A zone of format version 1 is ErrVersion.
// DESIGN.md, section 2, says how a waiter judges an owner.
//
// # Invariants
//
//	I1. A creator under flock writes the marker first and the header last.
//	    A file whose header is valid is fully formatted. A creation that
//	    died midway leaves the marker, which only a creating Open finishes.
//	I2. Open checks magic, version and byte order, checksum, then geometry
//	    against the file size, before it trusts any offset.
//	I3. Creation and a read-write attach allocate every byte of the file,
//	    so a writer's mapping never faults for lack of backing store. A
//	    fault that still happens is ErrFault under GuardFaults.
//	I4. The header is immutable after creation. The file stores offsets,
//	    never pointers.
//	I5. A lock word is 0 or names its owner's slot and generation. A waiter
//	    takes it over only from an owner that is gone, and must then repair
//	    what it protects. A live owner is never taken over.
//	I6. No lock wait is unbounded unless asked. LockWithin gives up after
//	    its timeout with ErrLockTimeout, and changes nothing.
//	I7. A registry record changes only under the registry's lock, with its
//	    sequence odd, and each change adds one to the generation. A reader
//	    keeps a copy only if the sequence was even and unchanged around it.
//
// DESIGN.md, section 4, states each in full.
//
// # Concurrency
//
// A *Zone is safe for use by many goroutines. Close must not race with
// other calls. Any number of processes may attach the same file. flock
// serialises creation. The lock words that the layer above places in its
// shards govern writes to shared words (Zone.Lock, Unlock). The registry
// (StoreRecord, LoadRecord) is shared by every process of the zone, and a
// read-only zone reads it without a lock.
package shm
