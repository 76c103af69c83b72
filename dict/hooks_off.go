//go:build !dicthooks

package dict

// shardHooks is empty in a build without the dicthooks tag (hooks.go).
type shardHooks struct{}

// logClear does nothing in a build without the dicthooks tag (hooks.go).
func (s *shard) logClear(off uint32, e *entry, what byte) {}

// logRecall does nothing in a build without the dicthooks tag (hooks.go).
func (s *shard) logRecall(key string, count uint32) {}

// logWalk does nothing in a build without the dicthooks tag (hooks.go).
func (s *shard) logWalk(n int) {}
