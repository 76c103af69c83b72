// Package counter counts in process memory and adds the counts to a shared
// dict now and then: lua-resty-counter for Go programs that run as several
// OS processes. A hot key then costs an atomic add in the process instead of
// a lock in shared memory per increment, and the zone holds every process's
// sum, behind by at most one sync interval.
//
//	c, err := counter.New(d, time.Second) // d is a *dict.Dict; Sync every second
//	c.Incr("hits:/login", 1)              // process memory only
//	n, err := c.Get("hits:/login")         // the zone's count, as of the last syncs
//	defer c.Close()                        // stops the timer and syncs once more
//
// Each key of a Counter has an entry in a map that lookups read without a
// lock (index.go). Its delta is split over stripes, and an increment adds
// to the stripe its goroutine's stack address picks (unsafe.go); a
// stripe's cells lie in blocks of their own (cells.go), so goroutines on
// different cores rarely write one cache line. The first increment after a
// sync puts the entry on a pending list; Sync takes the list, swaps each
// stripe to 0 and adds the sum to the dict with IncrInitNum(key, sum, 0, 0).
// Each key held costs process memory, which
//
//	go test -run '^$' -bench 'BenchmarkCounter/op=key-memory' ./counter
//
// measures (B/key; bench/RESULTS.md gives it in its counter section); an
// entry idle for 64 to 128 syncs (sweepEvery) is retired to bound that. A
// Handle (Counter.Key) keeps its key for good and adds without a lookup.
//
// It differs from lua-resty-counter where that one loses counts: a delta
// whose write fails (the key holds bytes, the zone is full) is kept and
// retried by the next Sync, and counted in Stats; Close syncs once more.
// A key whose delta sums to 0 since the last sync is not written, so not
// created either.
//
// Invariants:
//
//	I1. Every increment is taken from process memory by exactly one drain:
//	    cells are swapped to 0, never read and then cleared. So no increment
//	    is written twice, and none is lost but by a write that fails
//	    permanently (Sync documents which) or by a Counter that is
//	    discarded with unsynced counts.
//	I2. An Incr that has returned is taken by the next Sync to begin: its
//	    entry is dirty, so on the pending list, or pinned, which every Sync
//	    drains. An add that finds the entry clean makes it dirty; one that
//	    finds it dead moves the entry's delta to the key's live entry. Sync
//	    marks an entry clean, and retirement marks it dead, before draining
//	    it, and an add reads the state after adding, so no add falls between.
//	I3. The index holds at most one entry per key, and never a dead one:
//	    an entry is marked dead and removed under the index lock at once.
//	I4. A delta whose write fails with a retryable error is added back to
//	    its key and written by a later Sync; Sync and Stats report it.
//	I5. Handle.Add, and Incr of a key the Counter holds, allocate nothing
//	    and take no lock, but for a key's first Incr after a Sync, which
//	    takes the pending list's mutex to put the key on it (and may grow
//	    the list until it has held every key once).
//
// Concurrency: a *Counter and a *Handle are safe for use by many
// goroutines. Incr and Add write shared cache lines only when goroutines
// that share a stripe (rare among running goroutines, whose stacks pick
// stripes far apart) add at once to one key or to keys whose cells share
// a line; Syncs run one at a time; increments made while Close runs may
// miss its final sync. Across processes, each
// process has its own Counter and they meet only in the dict: every write
// is one IncrInitNum, atomic under its shard's lock, so the zone holds the sum
// of every delta any process has synced, and Get reads that sum, without
// any process's unsynced increments.
package counter
