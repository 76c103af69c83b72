package limiter

import (
	"errors"
	"math"
	"testing"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"10r/s", 10},
		{"1r/s", 1},
		{"30r/m", 0.5},
		{"1r/m", 1.0 / 60},
		{"120r/m", 2},
		// What lua-resty-redis-ratelimit's new() takes beyond nginx's
		// integers: Lua's tonumber before the unit, or no unit (r/s).
		{"0.5r/s", 0.5},
		{"1.5r/s", 1.5},
		{".5r/s", 0.5},
		{"5.r/s", 5},
		{"1e3r/m", 1000.0 / 60},
		{"0x10r/s", 16},
		{"0x1.8p1r/s", 3},
		{"0b101r/s", 5},
		{"+1r/s", 1},
		{"010r/s", 10},
		{"10", 10},
		{"0.25", 0.25},
		{" 10r/s", 10},
		{"10 r/s", 10},
		{"\t10\nr/m", 10.0 / 60},
		{"99999999999999999999r/s", 1e20},
		{"1e-300r/s", 1e-300},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got, err := ParseRate(tt.in); err != nil || got != tt.want {
				t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{
		// tonumber returns nil: the Lua module fails too.
		"", "10r", "10r/", "10r/h", "r/s", "r/m", "10R/S", "10r/s ", "10r/sr/s",
		"1_0r/s", "0xr/s", "1e1048576r/s", "0b2r/s", "0b1.r/s", "1er/s", "++1r/s",
		"+ 1r/s", "1 0r/s", "10LLr/s", "1ir/s", "1\x00r/s", "tenr/s",
		// Not positive: the Lua module's assert fails too.
		"0r/s", "-1r/s", "-0r/s", "0x0r/m", "nanr/s", "-infr/s", "1e-400r/s",
		// Accepted by the Lua module, then computed with infinity: refused.
		"infr/s", "infinityr/m", "1e400r/s",
		// Positive, but 0 requests per second once divided by 60.
		"5e-324r/m",
	} {
		t.Run("bad/"+in, func(t *testing.T) {
			if got, err := ParseRate(in); !errors.Is(err, ErrBadRate) {
				t.Errorf("ParseRate(%q) = %v, %v; want ErrBadRate", in, got, err)
			}
		})
	}
}

func TestParseRateParts(t *testing.T) {
	tests := []struct {
		in     string
		n, per float64
	}{
		{"1r/m", 1, 60},
		{"0.3r/m", 0.3, 60},
		{"7r/s", 7, 1},
		{"7", 7, 1},
	}
	for _, tt := range tests {
		n, per, err := ParseRateParts(tt.in)
		if err != nil || n != tt.n || per != tt.per {
			t.Errorf("ParseRateParts(%q) = %v, %v, %v; want %v, %v", tt.in, n, per, err, tt.n, tt.per)
		}
	}
	// The Lua module's milli-rate is floor(n·1000/per), in that order:
	// 969·1000/60 is 16150 exactly where 969/60·1000 is a hair below.
	n, per, _ := ParseRateParts("969r/m")
	if got := math.Floor(n * 1000 / per); got != 16150 {
		t.Errorf("floor(969·1000/60) = %v, want 16150", got)
	}
}
