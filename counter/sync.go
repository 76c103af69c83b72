package counter

import (
	"errors"
	"fmt"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// maxSyncErrs is how many per-key errors a Sync returns in full; the rest
// are counted in one more error.
const maxSyncErrs = 8

// Sync adds every key's unsynced delta to the dict, once per key. It
// skips keys whose delta is 0. It writes with IncrInitNum(key, delta, 0,
// 0). That is IncrInit, but it adds to any number. It returns the sum as
// the float64 it is stored as. IncrInit refuses a float sum that no int64
// holds.
//
// A write that fails keeps its delta for the next Sync. Examples are
// dict.ErrNoMemory, or dict.ErrNotNumber for a key that holds bytes. The
// dict may never hold the key: dict.ErrEmptyKey, dict.ErrKeyTooLong,
// dict.ErrValueTooLarge or dict.ErrReadOnly. Then the delta is dropped.
//
// Sync returns the failures joined, and errors.Is finds the dict's
// sentinels. Past maxSyncErrs keys the failures are only counted. Sync
// returns ErrClosed after Close. Syncs do not overlap: a Sync waits for
// one in progress.
func (c *Counter) Sync() error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	return c.syncLocked()
}

// syncLocked is Sync. Needs c.syncMu.
func (c *Counter) syncLocked() error {
	gen := c.gen.Add(1)
	var r syncResult
	batch := c.pending.take(c.spare)
	for _, e := range batch {
		// clean before drain: an add the drain misses sees clean and puts
		// the entry back on the list.
		e.state.Store(clean)
		e.flushed = gen
		c.flush(e, &r)
	}
	clear(batch)
	c.spare = batch[:0]
	c.pinMu.Lock()
	pinned := c.pinned // append-only: the prefix is never written again
	c.pinMu.Unlock()
	for _, e := range pinned {
		if e.flushed != gen { // not on this sync's list too
			e.flushed = gen
			c.flush(e, &r)
		}
	}

	err := r.err()
	c.st.Syncs++
	c.st.Writes += r.written
	c.st.Failures += uint64(r.kept + r.dropped)
	c.st.Dropped += uint64(r.dropped)
	c.st.Pending = r.kept
	c.st.LastError = err
	if gen-c.lastSweep >= c.sweepEvery {
		c.sweep(gen)
	}
	return err
}

// syncResult collects one Sync's outcome.
type syncResult struct {
	written       uint64
	kept, dropped int
	errs          []error
}

func (r *syncResult) fail(key string, err error) {
	if len(r.errs) < maxSyncErrs {
		r.errs = append(r.errs, fmt.Errorf("counter: sync %.64q: %w", key, err))
	}
}

func (r *syncResult) err() error {
	if n := r.kept + r.dropped - len(r.errs); n > 0 {
		r.errs = append(r.errs, fmt.Errorf("counter: sync: %d more keys failed", n))
	}
	return errors.Join(r.errs...)
}

// flush writes e's delta to the dict, or puts it back.
func (c *Counter) flush(e *entry, r *syncResult) {
	n := e.drain()
	if n == 0 {
		return
	}
	_, _, err := c.d.IncrInitNum(e.key, n, 0, 0)
	switch {
	case err == nil:
		r.written++
		return
	case permanent(err):
		r.dropped++
	default:
		e.add(n) // dirty again: the next Sync retries
		r.kept++
	}
	r.fail(e.key, err)
}

// permanent reports whether err means the dict will never take the key.
func permanent(err error) bool {
	for _, p := range [...]error{dict.ErrEmptyKey, dict.ErrKeyTooLong, dict.ErrValueTooLarge, dict.ErrReadOnly} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

// sweep retires the entries that no sync took a delta from since the last
// sweep, have no Handle, and are clean: each is marked dead and dropped
// from the index under the index lock, so no lookup finds it again, and
// then drained. An add that reached it meanwhile is moved to a new entry
// for the key, by this drain or by the adder's (settle). Needs c.syncMu.
func (c *Counter) sweep(gen uint64) {
	since := c.lastSweep
	c.lastSweep = gen
	type moved struct {
		key string
		n   int64
	}
	var late []moved
	c.idx.mu.Lock()
	retired := 0
	c.idx.eachLocked(func(e *entry) {
		if e.pinned || e.flushed > since || !e.state.CompareAndSwap(clean, dead) {
			return
		}
		retired++
		if n := e.drain(); n != 0 {
			late = append(late, moved{e.key, n})
		}
	})
	if retired > 0 {
		c.idx.rebuildLocked(func(e *entry) bool { return e.state.Load() == dead })
	}
	c.idx.mu.Unlock()
	c.st.Retired += uint64(retired)
	for _, m := range late {
		c.incrSlow(m.key, m.n)
	}
}

// loop calls Sync every interval until Close; its errors go to Stats.
func (c *Counter) loop(interval time.Duration) {
	defer close(c.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.Sync()
		case <-c.stop:
			return
		}
	}
}
