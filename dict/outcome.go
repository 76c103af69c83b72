package dict

// Outcome says what a write did besides its result. Package limiter uses it
// to account for a full zone.
type Outcome struct {
	// Forcible reports that live entries of other keys were evicted to
	// make room, as Set's forcible does. It may be true with ErrNoMemory
	// too.
	Forcible bool
	// Lost reports that the write created the key anew while its previous
	// entry, still live, had been evicted to make room for others: what
	// the key held was lost, not expired or deleted. It is counted in
	// Stats.Lost. A shard keeps a 4-byte trace of each of its last live
	// evictions, in a twentieth of its bytes (traces.go). A key that comes
	// back after more evictions than that is not reported. Traces written
	// together share the earliest expiry among them, so a key evicted with
	// one that expired sooner may not be reported either. Lost errs toward
	// false, but for a new key that meets another key's trace: about one
	// in four million.
	Lost bool
}
