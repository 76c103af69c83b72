// Package leak holds the arithmetic the leaky-bucket limiters share: the
// local one (package limiter) and the Redis one (package redistier) return
// the same durations for the same state.
package leak

import (
	"math"
	"time"
)

// Time returns how long a bucket takes to leak excess milli-requests. The
// bucket leaks rateM milli-requests a second. The time is excess/rate
// seconds, as the Lua modules return their delay. It is rounded to the
// nearest ns. It is 0 for excess <= 0 or NaN. It saturates at the longest
// Duration.
func Time(excess, rateM float64) time.Duration {
	if !(excess > 0) {
		return 0
	}
	ns := math.Round(excess / rateM * 1e9)
	if !(ns < math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
