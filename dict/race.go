//go:build race

package dict

import "sync/atomic"

// Under the race detector every operation takes its shard's lock (pin.go):
// the detector cannot know that a validated optimistic read discards what
// it read while another goroutine wrote it.
const optimistic = false

// bump adds one to an entry write's count. Under the race detector it adds
// atomically: the flusher loads the word while a writer may add to it, which
// the detector would report of a plain add, though a load of a word sees one
// whole value or the other.
func bump(p *uint32) uint32 { return atomic.AddUint32(p, 1) }
