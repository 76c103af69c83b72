package dict

import (
	"errors"
	"testing"
	"time"
)

func TestIncrInitNum(t *testing.T) {
	d, clk := openTest(t, Options{})
	if _, err := d.Set("f", Float(2.5), time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Set("i", Int(7), 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Set("b", Bytes([]byte("x")), 0, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key   string
		delta, init int64
		want        float64
		stored      Value
	}{
		{"float keeps its fraction", "f", -1, 9, 1.5, Float(1.5)},
		{"float below zero", "f", -2, 9, -0.5, Float(-0.5)},
		{"int stays int", "i", -1, 9, 6, Int(6)},
		{"absent is init+delta", "new", -1, 9, 8, Int(8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := d.IncrInitNum(tt.key, tt.delta, tt.init, 3*time.Second)
			if err != nil || got != tt.want {
				t.Fatalf("IncrInitNum(%q, %d, %d) = %v, %v; want %v", tt.key, tt.delta, tt.init, got, err, tt.want)
			}
			wantGet(t, d, tt.key, tt.stored, 0)
		})
	}
	// A live key keeps its TTL; the new one got initTTL.
	if ttl, err := d.TTL("f"); err != nil || ttl != time.Second {
		t.Errorf("TTL(f) = %v, %v; want 1s (kept)", ttl, err)
	}
	if ttl, err := d.TTL("new"); err != nil || ttl != 3*time.Second {
		t.Errorf("TTL(new) = %v, %v; want 3s (initTTL)", ttl, err)
	}
	clk.Advance(time.Second)
	if got, _, err := d.IncrInitNum("f", -1, 4, 0); err != nil || got != 3 {
		t.Errorf("IncrInitNum on an expired float = %v, %v; want 3 (init+delta)", got, err)
	}
	wantGet(t, d, "f", Int(3), 0)
	if _, _, err := d.IncrInitNum("b", 1, 0, 0); !errors.Is(err, ErrNotNumber) {
		t.Errorf("IncrInitNum on bytes = %v, want ErrNotNumber", err)
	}
	if _, _, err := d.IncrInitNum("x", 1, 0, -1); !errors.Is(err, ErrBadTTL) {
		t.Errorf("IncrInitNum with a negative TTL = %v, want ErrBadTTL", err)
	}
}
