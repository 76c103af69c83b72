package counter

import (
	"sync"
	"sync/atomic"
)

// The states of an entry (entry.state).
const (
	clean uint32 = iota // not on the pending list
	dirty               // on the pending list: the next Sync takes its delta
	dead                // retired and out of the index: increments that still reach it move to the key's live entry
)

// entry is a key's place in the process: its delta, spread over stripes,
// and its state. Only the cells are written on the hot path; the rest is
// read-mostly and shared by every core.
type entry struct {
	key   string
	c     *Counter
	cells []atomic.Pointer[cell] // one per stripe, made on first use; len is a power of two
	state atomic.Uint32          // clean, dirty or dead; see add and Counter.syncLocked

	// flushed is the sync generation that last took the entry's delta, or
	// the generation it was made in: owned by the syncer (Counter.syncMu),
	// set before the entry is published.
	flushed uint64
	// pinned is set, under index.mu, once a Handle refers to the entry: a
	// pinned entry is never retired, and every Sync drains it.
	pinned bool
}

// add adds n to the entry: one atomic add to the calling goroutine's
// stripe, then, unless the entry is already dirty, settle. The order (add,
// then read the state) is what makes Sync and retirement exact: see settle
// and drain.
func (e *entry) add(n int64) {
	s := stripe(len(e.cells))
	p := e.cells[s].Load()
	if p == nil {
		p = e.newCell(s)
	}
	p.n.Add(n)
	if e.state.Load() != dirty {
		e.settle()
	}
}

// settle follows an add that found the entry not dirty. A clean entry
// becomes dirty and goes on the pending list, so the next Sync takes the
// add. A dead entry's retirement may have drained its cells before the add
// landed, so settle drains them again and adds what it took to the key's
// live entry; the swaps of drain hand each increment to exactly one of the
// drains.
func (e *entry) settle() {
	for {
		switch e.state.Load() {
		case dirty:
			return
		case clean:
			if e.state.CompareAndSwap(clean, dirty) {
				e.c.pending.push(e)
				return
			}
		default: // dead
			if n := e.drain(); n != 0 {
				e.c.incrSlow(e.key, n)
			}
			return
		}
	}
}

// drain takes the entry's delta: it swaps each cell to 0 and returns the
// sum. Every increment is taken by exactly one drain. Sync marks the entry
// clean, and retirement marks it dead, before it drains: an add that this
// drain misses then reads that state afterwards, and settle deals with it.
func (e *entry) drain() int64 {
	var sum int64
	for i := range e.cells {
		if p := e.cells[i].Load(); p != nil && p.n.Load() != 0 {
			sum += p.n.Swap(0)
		}
	}
	return sum
}

// pendingList holds the dirty entries, in the order they became dirty. An
// entry is pushed only on its clean → dirty step, at most once per Sync,
// so the mutex is taken once per key per sync interval, not per increment.
type pendingList struct {
	mu   sync.Mutex
	list []*entry
}

func (p *pendingList) push(e *entry) {
	p.mu.Lock()
	p.list = append(p.list, e)
	p.mu.Unlock()
}

// take returns the list and starts a new one in spare's memory.
func (p *pendingList) take(spare []*entry) []*entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.list
	p.list = spare[:0]
	return l
}
