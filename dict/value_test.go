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

// TestValueBoolIsNonZero checks that Bool of a value that is not a bool is
// whether it is non-zero: -0 is a zero float, NaN a non-zero one.
func TestValueBoolIsNonZero(t *testing.T) {
	tests := []struct {
		name string
		v    Value
		want bool
	}{
		{"true", Bool(true), true},
		{"false", Bool(false), false},
		{"int 0", Int(0), false},
		{"int -1", Int(-1), true},
		{"float 0", Float(0), false},
		{"float -0", Float(math.Copysign(0, -1)), false},
		{"float 0.5", Float(0.5), true},
		{"float NaN", Float(math.NaN()), true},
		{"empty bytes", String(""), false},
		{"bytes", String("0"), true},
		{"zero Value", Value{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Bool(); got != tt.want {
				t.Errorf("%s.Bool() = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}
