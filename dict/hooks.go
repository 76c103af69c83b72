package dict

// Hooks: records of what eviction does, which tests keep. A test built with
// the dicthooks tag (go test -tags dicthooks) may set a shard's records:
//
//   - clears: the steps of clearPageInShard, which the model test replays
//     and the crash tests read after a kill.
//   - recalls: the keys whose new entry found their trace (storeInShard).
//   - walks: the entries each step of a walk visited (stepInShard).
//
// Without the tag shardHooks is empty, and logClear and logRecall do
// nothing and are inlined away (hooks_off.go). The hot paths pay nothing
// for them.

// The letters of clearPageInShard's steps, as logClear records them.
const (
	stepTry     = 't' // a try begun
	stepExpired = 'x' // an expired entry freed
	stepEvicted = 'e' // a live entry evicted
	stepMoved   = 'm' // an entry moved to another page
	stepCleared = 'c' // the page cleared
)
