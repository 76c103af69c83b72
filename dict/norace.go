//go:build !race

package dict

// bump adds one to an entry write's count, with a plain add: the page lock
// its caller holds orders it with the other adds (tally.go). The flusher's
// atomic load of the word sees one whole value or the other.
func bump(p *uint32) uint32 {
	n := *p + 1
	*p = n
	return n
}

// storePinMark stores a page's pin mark (pagelock.go), with a plain store: only
// the page's pinner writes it, and a drain loads it milliseconds later.
func storePinMark(p *uint32, v uint32) { *p = v }
