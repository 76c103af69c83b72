package dict

// Outcome says what a write did besides its result, for callers that
// account for a full zone, as package limiter does: whether it evicted
// other keys to make room, and whether it found its own key's state
// evicted.
type Outcome struct {
	// Forcible reports that live entries of other keys were evicted to
	// make room, as Set's forcible does. It may be true with ErrNoMemory
	// too.
	Forcible bool
	// Lost reports that the write created the key anew while its previous
	// entry, still live, had been evicted to make room for others: what
	// the key held was lost, not expired or deleted. It is counted in
	// Stats.Lost. A shard remembers the last ghostSlots live entries it
	// evicted (layout.go), so a key that comes back after many more
	// evictions is not reported: Lost errs toward false, never toward
	// true.
	Lost bool
}
