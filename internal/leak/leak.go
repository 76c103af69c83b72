// Package leak holds the arithmetic the leaky-bucket limiters share: the
// local one (package limiter) and the Redis one (package redistier) return
// the same durations for the same state.
package leak

import (
	"math"
	"time"
)

// Time returns how long a bucket that leaks rateM milli-requests a second
// takes to leak excess milli-requests: excess/rate seconds, as the Lua
// modules return their delay, to the nearest ns; none for excess <= 0 (or
// NaN), saturating at the longest Duration.
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
