package dict

import (
	"errors"
	"testing"
	"time"
)

// TestIncrInitNumTTL: the TTL that comes back with the sum is the one TTL
// reads right after, on every path an increment takes: a live int, a live
// float, an int that has no ref bit yet, a key created, a key without a
// TTL, and the guarded variant.
func TestIncrInitNumTTL(t *testing.T) {
	for _, guard := range []bool{false, true} {
		d, clk := openTest(t, Options{GuardFaults: guard})
		if _, err := d.Set("int", Int(7), 5*time.Second, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Set("float", Float(2.5), 4*time.Second, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Set("forever", Int(1), 0, 0); err != nil {
			t.Fatal(err)
		}
		clk.Advance(1500 * time.Millisecond)
		tests := []struct {
			key     string
			want    float64
			wantTTL time.Duration
		}{
			{"int", 6, 3500 * time.Millisecond},     // first increment: the entry's ref bit is not set yet
			{"int", 5, 3500 * time.Millisecond},     // plain int, the fast path
			{"float", 1.5, 2500 * time.Millisecond}, // a float adds under the page lock
			{"forever", 0, 0},
			{"new", 8, 3 * time.Second}, // created with initTTL
			{"new", 7, 3 * time.Second},
		}
		for _, tt := range tests {
			got, ttl, _, err := d.IncrInitNumTTL(tt.key, -1, 9, 3*time.Second)
			if err != nil || got != tt.want || ttl != tt.wantTTL {
				t.Errorf("guard %v: IncrInitNumTTL(%q) = %v, %v, %v; want %v, %v", guard, tt.key, got, ttl, err, tt.want, tt.wantTTL)
			}
			if read, err := d.TTL(tt.key); err != nil || read != ttl {
				t.Errorf("guard %v: TTL(%q) = %v, %v; want %v as IncrInitNumTTL said", guard, tt.key, read, err, ttl)
			}
		}
		if _, err := d.Set("b", Bytes([]byte("x")), 0, 0); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := d.IncrInitNumTTL("b", 1, 0, 0); !errors.Is(err, ErrNotNumber) {
			t.Errorf("IncrInitNumTTL on bytes = %v, want ErrNotNumber", err)
		}
		if _, _, _, err := d.IncrInitNumTTL("x", 1, 0, -1); !errors.Is(err, ErrBadTTL) {
			t.Errorf("IncrInitNumTTL with a negative TTL = %v, want ErrBadTTL", err)
		}
	}
}

// TestTTLOfExpiry: an expiry the clock reached since the increment reads as a
// millisecond left, not as none.
func TestTTLOfExpiry(t *testing.T) {
	for _, tt := range []struct {
		expiry, now int64
		want        time.Duration
	}{
		{0, 5, 0},
		{10, 5, 5 * time.Millisecond},
		{10, 10, time.Millisecond},
		{10, 12, time.Millisecond},
	} {
		if got := ttlOfExpiry(tt.expiry, tt.now); got != tt.want {
			t.Errorf("ttlOfExpiry(%d, %d) = %v, want %v", tt.expiry, tt.now, got, tt.want)
		}
	}
}
