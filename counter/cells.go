package counter

import (
	"sync"
	"sync/atomic"
)

// cell is one stripe of one key's unsynced delta.
type cell struct {
	n atomic.Int64
}

// arenaCells is how many cells an arena takes from Go's allocator at once:
// 512 bytes, an allocation that is 512-byte aligned, so it shares no cache
// line, nor the pair of lines that Intel's adjacent-line prefetcher
// fetches together, with another arena's cells.
const arenaCells = 64

// arena hands out the cells of one stripe. A stripe's cells, for every
// key, are dense and lie together, apart from other stripes' cells: a
// goroutine adding to many keys touches few lines, and two goroutines on
// different stripes never write one line, nor pull the other's lines into
// their cache when the prefetcher streams ahead. (With a cell per
// allocation, cells of goroutines that ran on one P interleave in memory,
// and two goroutines walking their keys slowed each other by a quarter.)
// The Go allocator frees a block once no entry refers to any of its cells,
// so a retired entry's cells need no bookkeeping; the price is that a live
// cell can keep its block's 512 bytes alive.
type arena struct {
	mu    sync.Mutex
	block []cell // what is left of the current block
}

// newCell makes the cell of stripe s, which has none yet, or returns the one
// another goroutine made first.
func (e *entry) newCell(s int) *cell {
	a := &e.c.arenas[s]
	a.mu.Lock()
	if len(a.block) == 0 {
		a.block = make([]cell, arenaCells)
	}
	p := &a.block[0]
	a.block = a.block[1:]
	a.mu.Unlock()
	if e.cells[s].CompareAndSwap(nil, p) {
		return p
	}
	return e.cells[s].Load()
}
