package limiter

import (
	"errors"
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
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got, err := ParseRate(tt.in); err != nil || got != tt.want {
				t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
	for _, in := range []string{
		"", "10", "10r", "10r/", "10r/h", "r/s", "0r/s", "-1r/s", "+1r/s", "1.5r/s",
		" 10r/s", "10r/s ", "10 r/s", "10R/S", "99999999999999999999r/s", "10r/sr/s",
	} {
		t.Run("bad/"+in, func(t *testing.T) {
			if got, err := ParseRate(in); !errors.Is(err, ErrBadRate) {
				t.Errorf("ParseRate(%q) = %v, %v; want ErrBadRate", in, got, err)
			}
		})
	}
}
