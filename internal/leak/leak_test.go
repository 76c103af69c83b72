package leak

import (
	"math"
	"testing"
	"time"
)

func TestTime(t *testing.T) {
	for _, tt := range []struct {
		excess, rateM float64
		want          time.Duration
	}{
		{10_000_001_000, 1000, 10_000_001 * time.Second},
		{4015, 1000, 4015 * time.Millisecond}, // not 4.014999999 s
		{1, 3, 333_333_333},
		{0, 1000, 0},
		{-5, 1000, 0},
		{math.NaN(), 1000, 0},
		{math.MaxInt64, 1, math.MaxInt64},
		{9_300_000_000, 1, math.MaxInt64},
		{1e300, 1e-300, math.MaxInt64},
	} {
		if got := Time(tt.excess, tt.rateM); got != tt.want {
			t.Errorf("Time(%g, %g) = %d, want %d", tt.excess, tt.rateM, got, tt.want)
		}
	}
}
