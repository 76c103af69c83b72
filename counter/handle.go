package counter

// Handle counts increments of one key without looking it up. It is for
// the few hot keys of a program, such as request totals. Its cells are the
// key's own. So Incr of the same key and Add mix freely. The key is held
// in memory for the Counter's life. Every Sync drains it. A Handle is safe
// for use by many goroutines.
type Handle struct {
	// cells holds, at i, the key's cell of stripe i*n/maxStripes, where n
	// is the Counter's stripe count: stripe(maxStripes) scaled down as
	// stripe(n) scales, so that Add picks the stripe Incr would, with a
	// constant count and one load between it and the add.
	cells [maxStripes]*cell
	key   string
}

// Key returns a Handle for key. It takes a mutex. The first time for a
// key, it allocates a cell per stripe. Keep the Handle rather than calling
// Key per increment.
func (c *Counter) Key(key string) *Handle {
	e := c.entryFor(key, true)
	h := &Handle{key: e.key}
	for i := range h.cells {
		h.cells[i] = e.cells[i*len(e.cells)/maxStripes].Load()
	}
	return h
}

// Add adds n to the key's count in process memory. It is one atomic add.
// It does no hashing, lookup, lock or allocation.
func (h *Handle) Add(n int64) {
	h.cells[stripe(maxStripes)&(maxStripes-1)].n.Add(n)
}

// Name returns the Handle's key.
func (h *Handle) Name() string { return h.key }
