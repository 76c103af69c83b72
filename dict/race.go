//go:build race

package dict

// Under the race detector every operation takes its shard's lock (pin.go):
// the detector cannot know that a validated optimistic read discards what
// it read while another goroutine wrote it.
const optimistic = false
