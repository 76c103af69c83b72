//go:build dicthooks

package dict

import "strings"

// shardHooks are a shard's records, which a test sets (hooks.go).
type shardHooks struct {
	// clears, when not nil, records what clearPageInShard does.
	clears *[]clearStep
	// recalls, when not nil, records the keys whose new entry found their
	// trace (storeInShard).
	recalls *[]recall
}

// walkSteps, when not nil, records how many entries each step of a walk of
// any shard visited, one hold of its lock each (stepInShard). A shard has
// no room for one more record: shardSize bounds its fields. Only a test
// that walks from one goroutine sets it.
var walkSteps *[]int

// clearStep is one step of clearPageInShard as shard.clears records it: a
// try begun, a key and what became of it, or the page cleared.
type clearStep struct {
	key  string
	what byte // stepTry, stepExpired, stepEvicted, stepMoved, stepCleared
}

// recall is a new entry that found its key's trace, and the shard's Count
// with it, as shard.recalls records it.
type recall struct {
	key   string
	count uint32
}

// logClear records a step in s.clears, when it is set.
func (s *shard) logClear(off uint32, e *entry, what byte) {
	if s.clears == nil {
		return
	}
	step := clearStep{what: what}
	if e != nil {
		step.key = string(s.keyOf(off, e))
	}
	*s.clears = append(*s.clears, step)
}

// logRecall records in s.recalls, when it is set, that the new entry of key
// found its trace, with the shard's Count.
func (s *shard) logRecall(key string, count uint32) {
	if s.recalls != nil {
		// A copy: key itself must not escape (allocation-free writes).
		*s.recalls = append(*s.recalls, recall{strings.Clone(key), count})
	}
}

// logWalk records in walkSteps, when it is set, that a step of a walk
// visited n entries.
func (s *shard) logWalk(n int) {
	if walkSteps != nil {
		*walkSteps = append(*walkSteps, n)
	}
}
