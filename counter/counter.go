package counter

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Stripe counts: a key's delta is spread over at least minStripes cells and
// at most maxStripes; New picks twice GOMAXPROCS between the two, so that
// two running goroutines rarely share a stripe. maxStripes is within
// stripe's range: 1<<hintBits.
const (
	minStripes = 8
	maxStripes = 32
)

// sweepEvery is how many syncs pass between retirement sweeps: an entry
// that no sync found dirty since the previous sweep is retired.
const sweepEvery = 64

// Counter counts increments in process memory and adds them to a dict on
// Sync. The zero value is not usable; call New.
type Counter struct {
	d       *dict.Dict
	idx     index
	pending pendingList
	stripes int           // len(entry.cells)
	arenas  []arena       // one per stripe
	gen     atomic.Uint64 // sync generation: Sync calls begun
	closed  atomic.Bool

	closeMu sync.Mutex // held through Close
	stop    chan struct{}
	done    chan struct{} // closed when the sync goroutine returns; nil without one

	syncMu     sync.Mutex // serializes syncs; guards the fields below
	spare      []*entry   // the pending list before last, reused
	lastSweep  uint64     // the generation of the last retirement sweep
	sweepEvery uint64     // syncs between sweeps; tests lower it
	st         Stats      // but for Keys

	pinMu  sync.Mutex
	pinned []*entry // under pinMu: entries with a Handle, append-only
}

// New returns a Counter that adds its increments to d. With syncInterval >
// 0, a goroutine calls Sync at that interval until Close. With 0, the
// caller calls Sync. Close the Counter before d. A Sync on a closed Dict
// fails, and keeps its deltas.
//
// Errors: ErrNilDict, ErrBadInterval.
func New(d *dict.Dict, syncInterval time.Duration) (*Counter, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	if syncInterval < 0 {
		return nil, ErrBadInterval
	}
	stripes := stripeCount(runtime.GOMAXPROCS(0))
	c := &Counter{d: d, stripes: stripes, arenas: make([]arena, stripes), sweepEvery: sweepEvery}
	c.idx.init()
	if syncInterval > 0 {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.loop(syncInterval)
	}
	return c, nil
}

// stripeCount returns 2×procs rounded up to a power of two, within
// [minStripes, maxStripes].
func stripeCount(procs int) int {
	n := minStripes
	for n < 2*procs && n < maxStripes {
		n <<= 1
	}
	return n
}

// Incr adds step to key's count in process memory. A later Sync adds it
// to the dict. Incr of a key the Counter holds is a map read and one
// atomic add. It does not allocate. The key's first Incr after a Sync also
// puts it on the pending list, under a mutex. A key's first Incr takes a
// mutex and allocates. So does its first after it was retired for being
// idle. After Close an increment is kept in memory but never synced.
func (c *Counter) Incr(key string, step int64) {
	if e := c.idx.load(key); e != nil {
		e.add(step)
		return
	}
	c.incrSlow(key, step)
}

// incrSlow is Incr for a key that is not in the immutable map.
func (c *Counter) incrSlow(key string, step int64) {
	c.entryFor(key, false).add(step)
}

// entryFor returns key's live entry, making it when there is none, and pins
// it when pin is true.
func (c *Counter) entryFor(key string, pin bool) *entry {
	c.idx.mu.Lock()
	defer c.idx.mu.Unlock()
	e := c.idx.lookupLocked(key)
	if e == nil {
		e = &entry{
			key:     key,
			c:       c,
			cells:   make([]atomic.Pointer[cell], c.stripes),
			flushed: c.gen.Load(),
		}
		c.idx.insertLocked(e)
	}
	if pin && !e.pinned {
		e.pinned = true
		for i := range e.cells {
			if e.cells[i].Load() == nil {
				e.newCell(i)
			}
		}
		c.pinMu.Lock()
		c.pinned = append(c.pinned, e)
		c.pinMu.Unlock()
	}
	return e
}

// Get returns key's count in the dict. That is the sum of what every
// process has synced. It leaves out this process's unsynced increments. A
// float count is truncated toward zero. It is clamped as dict.Value.Int
// clamps it: MaxInt64 at or above 2^63, MinInt64 below -2^63, 0 for NaN.
//
// Errors are the dict's, such as dict.ErrNotFound for an absent key. Get
// returns dict.ErrNotNumber for a key that holds bytes or a bool, and
// ErrClosed.
func (c *Counter) Get(key string) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	v, _, err := c.d.Get(key)
	if err != nil {
		return 0, err
	}
	if k := v.Kind(); k != dict.KindInt && k != dict.KindFloat {
		return 0, dict.ErrNotNumber
	}
	return v.Int(), nil
}

// Reset subtracts n from key's count in the dict, and returns the new
// count. It sets an absent key to 0. It is IncrInit(key, −n, n, 0), as
// lua-resty-counter's reset. Unsynced increments of the key stay in
// process memory. The next Sync adds them. Errors are IncrInit's, and
// ErrClosed.
func (c *Counter) Reset(key string, n int64) (int64, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	v, _, err := c.d.IncrInit(key, -n, n, 0)
	return v, err
}

// Keys returns up to max keys of the dict, or all for max 0. It is
// dict.Keys: counters and any other keys alike. Errors are the dict's, and
// ErrClosed.
func (c *Counter) Keys(max int) ([]string, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.d.Keys(max)
}

// Close stops the sync goroutine and waits for it to return. It syncs once
// more, and returns that sync's error. Deltas that sync could not write are
// lost with the Counter (Stats().Pending counts them). Later calls return
// nil. Increments made while Close runs may miss its sync.
func (c *Counter) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if c.done != nil {
		close(c.stop)
		<-c.done
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	return c.syncLocked()
}
