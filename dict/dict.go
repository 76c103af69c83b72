package dict

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmzone/shmzone/internal/coarseclock"
	"github.com/shmzone/shmzone/shm"
	"github.com/shmzone/shmzone/slab"
)

// How an operation runs.
//
// An operation reaches a key's entry in one of three ways. An internal
// function's name says which way it runs:
//
//   - Optimistic: no lock. The function loads every word atomically. It then
//     checks that the shard's Seq and the entry's Ver did not move. If they
//     moved, nothing it read counts, and it tries again. Its name ends in
//     Optimistic.
//   - Page lock: the caller holds the lock of the slab page that holds the
//     entry. It pinned the entry after an optimistic find. It may write the
//     entry in place, at its size. It never changes the shard's structure.
//     Its name ends in InPage.
//   - Shard lock: the caller holds the shard's lock, which keeps Seq odd. It
//     drains an entry's page before it changes that entry. It may insert,
//     remove, move and evict entries. Its name ends in InShard.
//
// A function with none of these suffixes takes the locks it needs itself.
// A function named lockX takes the shard's lock and runs xInShard. A
// function named guardedX is X under Options.GuardFaults: a fault on the
// mapping becomes an error. DESIGN.md, section 8, has the whole protocol.

// Options says how to open or create a dictionary's zone. The zero value
// attaches an existing zone read-write with the coarse system clock.
type Options struct {
	// Size is the zone's size in bytes. Open creates the zone when the file
	// is absent and Size > 0. It rounds Size down to whole shards.
	//
	// An existing zone must have the size it was created with. Open returns
	// ErrSizeMismatch for a zone of another size, even read-only. Size 0
	// attaches at any size, and Dict.Size tells the size in force. A zone
	// cannot grow: shmctl dump and restore copy its keys to a new one.
	Size int64
	// Shards is a new zone's shard count, a power of two; 0 chooses from the
	// size. Shards: 1 gives one eviction order for the whole zone.
	Shards int
	// Perm is a new zone's mode, set exactly whatever the umask; 0 means
	// 0600. See shm.Options.Perm.
	Perm os.FileMode
	// ReadOnly maps the zone read-only, for inspection. Reads take no lock
	// and move nothing in the eviction order. Writes return ErrReadOnly.
	// A read may see a write that another process has half done.
	ReadOnly bool
	// Clock returns the time in Unix milliseconds. Tests inject time here.
	// nil uses a coarse system clock. It ticks every millisecond while it
	// is read, and stops when it is not.
	Clock func() int64
	// LockTimeout bounds how long a wait for a shard's lock may see no
	// progress. A holder that repairs a shard shows progress as it goes. A
	// lock that passes from holder to holder shows progress too. An
	// operation that waited this long for a live holder that showed none
	// returns ErrLockTimeout and changes nothing. A stretch in which the
	// waiter was not run counts 10ms at most. 0 means
	// DefaultLockTimeout. A negative value waits without bound. A dead holder is taken over after a few milliseconds, whatever
	// the timeout.
	LockTimeout time.Duration
	// GuardFaults makes a fault in the zone's mapping an error instead of
	// a crash. Such a fault means another process truncated the zone file
	// while it was mapped. A full filesystem cannot cause one: Open
	// allocates the file's space. Without the guard, the process dies of
	// SIGBUS. With it, the operation returns an error wrapping
	// shm.ErrFault, and so does every later call: close the Dict. The
	// guard adds a deferred call to every operation; BenchmarkGuardFaults
	// measures it. A fault at a non-nil address in a function given to
	// Update or Mutate is reported the same way.
	GuardFaults bool
}

// DefaultLockTimeout is the LockTimeout of Options that set none.
// DESIGN.md, section 10, says why it is a second.
const DefaultLockTimeout = time.Second

// Dict is a dictionary in a zone file shared by every process that opens it.
// The zero value is not usable: create a Dict with Open.
type Dict struct {
	z        *shm.Zone
	shards   []shard
	mask     uint64
	seed     uint64
	clock    func() int64
	word     *int64 // the coarse clock's word, or stopped for an injected clock (Now)
	readOnly bool
	state    atomic.Uint32         // stateOpen, stateClosed or stateFaulted
	fault    atomic.Pointer[error] // the fault that ended a guarded Dict
	guard    bool                  // Options.GuardFaults
	maxEntry int                   // the largest entry a shard can hold
	onTicker bool                  // on the coarse clock's ticker (tally.go), released by Close
	// lockTimeout bounds lock waits (Options.LockTimeout); <= 0 is no bound.
	lockTimeout time.Duration
	tallies     []tallies   // this process's operation counts per shard (tally.go)
	holds       []lockHolds // this Dict's holds of each shard's lock
	tallyMu     sync.Mutex  // orders the adds of entry writes' counts to the zone (tally.go)
	// checks counts the clock's checks that flushed the Dict's counts;
	// they flush its page counts every pageTicks (flushOpenTallies).
	checks    atomic.Uint64
	pageTicks uint64
	proc      slab.Proc // what the shards' slab views share: whether this process has allocated
}

// shard is this process's view of one shard; all state is in mem. It is
// padded to shardSize bytes, a power of two, so that shardFor indexes
// d.shards with a shift, not a multiply: the index lies on every operation's
// path from its key's hash to its first load (DESIGN.md, section 4).
type shard struct {
	shardFields
	_ [shardSize - unsafe.Sizeof(shardFields{})]byte
}

// lockHolds counts a Dict's holds of one shard's lock, on a cache line of
// its own: only the lock's takers write it. A shard's lock word that is
// the Dict's own while it counts no hold is corrupt (shm.Holders).
type lockHolds struct {
	shm.Holders
	_ [64 - unsafe.Sizeof(shm.Holders{})]byte
}

// shardSize is the size of a shard; fields that outgrow it fail to
// compile.
const shardSize = 256

// shardFields are a shard's fields, apart from its padding.
type shardFields struct {
	h       *shardHdr    // the header in mem
	lockw   *uint64      // &h.Lock, or a word of this process for a read-only view
	holds   *shm.Holders // this Dict's holds of lockw, which is taken and released counted in it
	mem     []byte
	index   []uint32
	traces  []uint32 // the keys evicted while live (traces.go)
	arena   []byte
	slab    *slab.Slab
	idxMask uint32
	seed    uint64
	id      int
	shift   uint
	steps   int // bound of every walk: no arena holds more entries
	z       *shm.Zone
	timeout time.Duration // the Dict's lockTimeout, for page locks
	tally   *tallies      // this process's counts of the shard (tally.go)
	pages   []pageTally   // this process's counts of entry writes, per slab page (tally.go)
	// pagesOff and pageShift are the slab's PageGeometry, for pages.
	pagesOff, pageShift uint32
	// shardHooks are the records that tests built with the dicthooks tag
	// keep, and nothing otherwise (hooks.go).
	shardHooks
	// lastMoved is the hash of the key whose entry this process last moved
	// to a page of its own (move.go); atomic.
	lastMoved uint64
	// swept is set once this Dict released the shard's pages of owners
	// gone, at its first allocation there (release.go); from then on it
	// may hold pages of the shard, which Close releases.
	swept atomic.Bool
}

// Path returns the zone file's path.
func (d *Dict) Path() string { return d.z.Path() }

// Header returns a copy of the zone's validated header: its geometry, hash
// seed and creation time. The header is immutable after create.
func (d *Dict) Header() shm.Header { return d.z.Header() }

// Created reports whether this Open created and formatted the zone, rather
// than attaching one that existed.
func (d *Dict) Created() bool { return d.z.Created() }

// ReadOnly reports whether the zone is mapped read-only (Options.ReadOnly).
func (d *Dict) ReadOnly() bool { return d.readOnly }

// Err returns the error every other call returns now. It is nil while d is
// usable. After Close it is ErrClosed. After a guarded operation faulted in
// the zone's mapping, it wraps shm.ErrFault; see Options.GuardFaults.
// Stats, FreeSpace and the other calls with no error return zeros then: Err
// tells those from an empty zone's.
func (d *Dict) Err() error { return d.usable() }

// FreeSpace returns the bytes that can still be allocated without evicting,
// summed over the shards: free pages and free chunks of partly used pages. A
// shard whose lock stays held past LockTimeout is left out.
func (d *Dict) FreeSpace() int64 {
	if d.guard {
		var err error
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if d.usable() != nil {
		return 0
	}
	var n int64
	for i := range d.shards {
		s := &d.shards[i]
		if d.lock(s) != nil {
			continue
		}
		n += s.slab.FreeBytes()
		d.unlock(s)
	}
	return n
}

// stopped is the clock word of a Dict whose clock is injected: never
// running, so that Now calls the injected clock.
var stopped int64

// Now returns the dictionary's time in Unix milliseconds: the time its TTLs
// are measured against. It is Options.Clock's time when one was injected,
// and otherwise the coarse per-process clock's. Code built on the
// dictionary, such as rate limiters, reads it, so that a test's injected
// clock drives that code too.
//
// Now inlines, and costs one atomic load while the coarse clock runs.
func (d *Dict) Now() int64 {
	if w := atomic.LoadInt64(d.word); w&coarseclock.StateMask == coarseclock.Running {
		return w >> coarseclock.StateBits
	}
	return d.clock()
}

// shardFor returns the shard of a hash.
func (d *Dict) shardFor(h uint64) *shard { return &d.shards[h&d.mask] }

// check validates a key and the Dict's state for an operation.
func (d *Dict) check(key string, write bool) error {
	if err := d.usable(); err != nil {
		return err
	}
	if write && d.readOnly {
		return ErrReadOnly
	}
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(key) > MaxKeyLen {
		return ErrKeyTooLong
	}
	return nil
}

// checkValue validates a value to store under key with a TTL and returns its
// expiry: ErrBadValue for the zero Value, ErrBadTTL, ErrValueTooLarge.
func (d *Dict) checkValue(key string, v *Value, ttl time.Duration) (int64, error) {
	if v.kind == KindNone || v.kind == KindList {
		return 0, ErrBadValue
	}
	if entrySize(len(key), storedSize(v.kind, len(v.b))) > d.maxEntry {
		return 0, ErrValueTooLarge
	}
	return d.expiryFor(ttl)
}

// lookup validates key, locks its shard and finds its entry, 0 when absent.
// On success the caller holds the shard's lock and must unlock it; on error
// the lock is released. For a write, the entry's page is drained, so that
// the entry is the caller's to read and change.
func (d *Dict) lookup(key string, write bool) (s *shard, h uint64, off uint32, err error) {
	if err := d.check(key, write); err != nil {
		return nil, 0, 0, err
	}
	h = hashKey(d.seed, key)
	s = d.shardFor(h)
	if err := d.lock(s); err != nil {
		return nil, 0, 0, err
	}
	if write {
		off, err = d.findDrainedInShard(s, key, h)
	} else if off, err = s.findInShard(key, h); err != nil {
		err = d.corruptInShard(s, "index")
	}
	if err != nil {
		d.unlock(s)
		return nil, 0, 0, err
	}
	return s, h, off, nil
}

// findDrainedInShard returns the offset of key's entry, expired or not, or
// 0. It drains the entry's page (drainInShard), so that the entry is the
// caller's to read and change while it holds the shard's lock.
func (d *Dict) findDrainedInShard(s *shard, key string, h uint64) (uint32, error) {
	off, err := s.findInShard(key, h)
	if err != nil {
		return 0, d.corruptInShard(s, "index")
	}
	if off == 0 {
		return 0, nil
	}
	return d.drainInShard(s, off)
}

// expiryFor converts a TTL to an absolute expiry in Unix ms: 0 for never, and
// at least 1 ms ahead for any positive TTL.
func (d *Dict) expiryFor(ttl time.Duration) (int64, error) {
	switch {
	case ttl < 0:
		return 0, ErrBadTTL
	case ttl == 0:
		return 0, nil
	}
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++ // rounds up; ttl+time.Millisecond-1 wraps near MaxInt64
	}
	if x := d.Now() + ms; x > 0 && x < maxExpiry {
		return x, nil
	}
	return maxExpiry, nil // far beyond any TTL the system clock gives
}
