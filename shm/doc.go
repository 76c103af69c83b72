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
// An Open that may not create (no Size, or ReadOnly) and finds the file
// empty cannot tell a creator about to lock it from a file that will stay
// empty: it opens the path again for up to 100ms, attaching the zone once a
// creator has begun it, and refuses a file still empty with ErrNotZone.
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
//	    (parseHeader).
//	I3. Every byte of the file is allocated when it is created (fallocate,
//	    or, on a filesystem without it, zeros written after the marker), and
//	    when it is attached read-write (a sparse copy is allocated, or
//	    refused with ErrNoSpace), so a mapped page of a writer never faults
//	    for lack of backing store. A fault that still happens (a read-only
//	    mapping of a sparse file, a file truncated while mapped) becomes
//	    ErrFault in code guarded by GuardFaults and CatchFault: Format,
//	    dict.Open and every shmctl verb. The operations of the layer above
//	    are guarded when its user asks (dict.Options.GuardFaults): a defer,
//	    a recover and two SetPanicOnFault calls are a large share of an
//	    operation's cost, so by default such a fault ends the process with
//	    the runtime's SIGBUS report, having written nothing out of place.
//	I4. The header is immutable after create; the file stores offsets, never
//	    pointers.
//	I5. A lock word holds 0 or its owner: an owner slot and that slot's
//	    generation (lock.go). A waiter takes it over only when the kernel
//	    says the slot's owner is gone, or the word names no owner, or it is
//	    the waiter's own zone's word and no goroutine of that zone holds it
//	    (kin.go). It is told so, and must repair what the lock protects
//	    before using it. A live owner is never taken over, whatever its PID
//	    namespace.
//	I6. No lock wait is unbounded unless asked: LockWithin gives up after its
//	    timeout with ErrLockTimeout, having changed nothing.
//
// # Lock owners
//
// Locks are words in the zone that processes take with a CAS, so that an
// uncontended lock costs no system call. What a word must then say is who
// holds it, in a form that a waiter in any process can check for life.
// A pid cannot: containers that share a zone file (a pod's memory-backed
// emptyDir, docker --ipc=shareable, sidecars) put its processes in different
// PID namespaces, where the same number names different processes or none,
// and a pid is handed out again after its process dies. So liveness is asked
// of the kernel, which owns it in every namespace alike:
//
//   - Slot table. The header page holds Slots generation words after the
//     header (layout.go). Slot i is held by whoever holds an OFD write lock
//     (fcntl F_OFD_SETLK) on byte slotByte(i) of the file.
//   - Claim. A read-write Open dups its descriptor (close-on-exec, kept until
//     Close) and tries F_OFD_SETLK on each slot's byte in turn; the first it
//     gets is its slot. It then adds 1 to that slot's generation (0 is
//     skipped) and from then on writes the word generation<<32 | slot into
//     every lock it takes. A read-only Open claims no slot and writes no lock
//     word in the zone.
//   - Takeover. A waiter that has waited deadCheckAfter (or its whole
//     timeout, if shorter) judges the word it sees: dead when the slot is out
//     of range or the generation is 0, when the slot's generation in the
//     table is not the word's (the slot was claimed again since its owner
//     died), or when F_OFD_GETLK says nobody holds the slot's byte; live
//     otherwise. This zone's own word is live, unless the caller tracks
//     its goroutines' holds and none holds the word (kin.go). A dead word
//     is replaced by the waiter's own with a CAS on the exact word it
//     judged, so that two waiters cannot both take it over.
//   - Generation. A new owner of a slot holds the slot's byte before it bumps
//     the generation, and an owner writes lock words only after its bump, so
//     a word of a live owner always carries the table's generation. A word
//     left by a dead owner whose slot was claimed again carries an older
//     one: it is judged dead though the byte is held. A waiter that reads the
//     generation between the new claim and its bump judges such a word live
//     for that moment and judges it again on its next turn.
//   - Tags. OwnerTag names an owner in 32 bits: its slot, and its
//     generation's low bits above it. The layer above writes tags where a
//     lock word does not fit. TagReplaced judges a tag by the generation
//     alone, with no system call; TagGone also asks the kernel, as a
//     takeover does. Neither ever judges an open zone's tag gone.
//   - Why OFD locks. The kernel releases an OFD lock when the last
//     descriptor of its open file description closes, which a process's
//     death does, in whatever PID namespace, and a GETLK from any process
//     sees it. POSIX record locks would be dropped when the process closes
//     any descriptor of the file (a second Open and Close of the same zone,
//     say) and report pids from the lock holder's namespace; flock has no
//     byte ranges. Because each Open has its own open file description, two
//     zones of one process on one file hold two slots and are two owners.
//
// A zone format of another version (version 1 named owners by pid) is
// refused with ErrVersion. At most Slots zones can be open read-write on one
// file at once; the next Open returns ErrNoSlot.
//
// Concurrency: a *Zone may be used by many goroutines at once; Close must not
// race with other use. Across processes, any number may attach the same file;
// creation is serialised by flock, and mutation of shared words is governed by
// the lock words the layer above places in its shards (Zone.Lock, Unlock).
package shm
