//go:build race

package dict

import "sync/atomic"

// bump adds one to an entry write's count. Under the race detector it adds
// atomically. The page lock that orders the adds is a word of the zone's
// mapping, which the detector does not watch: it would report the plain
// adds of two goroutines as a race, and a plain add against the flusher's
// atomic load.
func bump(p *uint32) uint32 { return atomic.AddUint32(p, 1) }

// storePinMark stores a page's pin mark (pagelock.go). Under the race detector the
// store is atomic, as the drain's load of the mark is.
func storePinMark(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
