package dict

import (
	"math"
	"testing"
)

// Tests of Value's accessors.

// TestValueIntClampsFloat checks that Int truncates a float toward zero
// and clamps one that no int64 holds, where Go's conversion is
// platform-dependent (MinInt64 on amd64 for each of them).
func TestValueIntClampsFloat(t *testing.T) {
	tests := []struct {
		name string
		f    float64
		want int64
	}{
		{"fraction", 2.75, 2},
		{"negative fraction", -2.75, -2},
		{"largest below 2^63", 0x1p63 - 1024, 0x1p63 - 1024},
		{"-2^63", -0x1p63, math.MinInt64},
		{"2^63", 0x1p63, math.MaxInt64},
		{"1e19", 1e19, math.MaxInt64},
		{"+inf", math.Inf(1), math.MaxInt64},
		{"-1e19", -1e19, math.MinInt64},
		{"-inf", math.Inf(-1), math.MinInt64},
		{"NaN", math.NaN(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Float(tt.f).Int(); got != tt.want {
				t.Errorf("Float(%v).Int() = %d, want %d", tt.f, got, tt.want)
			}
		})
	}
}
