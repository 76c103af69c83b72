package dict

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// Tests of the read-modify-write operations: IncrFloat, Update and
// CompareAndSwap.

func TestIncrFloat(t *testing.T) {
	d, _ := openTest(t, Options{})
	specSet(t, d, "f", Float(1.5), time.Hour, 3)
	if f, err := d.IncrFloat("f", 0.25); f != 1.75 || err != nil {
		t.Fatalf("IncrFloat(\"f\", 0.25) = %v, %v; want 1.75, <nil>", f, err)
	}
	wantGet(t, d, "f", Float(1.75), 3)
	if ttl, err := d.TTL("f"); ttl != time.Hour || err != nil {
		t.Fatalf("TTL(\"f\") after IncrFloat = %v, %v; want 1h, <nil>", ttl, err)
	}
	// An int becomes a float.
	specSet(t, d, "i", Int(10), 0, 0)
	if f, err := d.IncrFloat("i", 0.5); f != 10.5 || err != nil {
		t.Fatalf("IncrFloat(\"i\", 0.5) on 10 = %v, %v; want 10.5, <nil>", f, err)
	}
	wantGet(t, d, "i", Float(10.5), 0)
	// Incr on a float adds to the float and returns the sum truncated.
	if n, err := d.Incr("i", 2); n != 12 || err != nil {
		t.Fatalf("Incr(\"i\", 2) on 10.5 = %d, %v; want 12, <nil>", n, err)
	}
	wantGet(t, d, "i", Float(12.5), 0)
	if n, _, err := d.IncrInit("i", -20, 0, 0); n != -7 || err != nil {
		t.Fatalf("IncrInit(\"i\", -20, 0, 0) on 12.5 = %d, %v; want -7, <nil>", n, err)
	}
	wantGet(t, d, "i", Float(-7.5), 0)
	if _, err := d.IncrFloat("absent", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("IncrFloat(\"absent\", 1) = %v, want %v", err, ErrNotFound)
	}
	specSet(t, d, "s", String("1"), 0, 0)
	if _, err := d.IncrFloat("s", 1); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("IncrFloat(\"s\", 1) on bytes = %v, want %v", err, ErrNotNumber)
	}
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	if _, err := d.IncrFloat("l", 1); !errors.Is(err, ErrNotNumber) {
		t.Fatalf("IncrFloat(\"l\", 1) on a list = %v, want %v", err, ErrNotNumber)
	}
}

// TestIncrFloatBeyondInt checks that Incr and IncrInit refuse a float sum
// that no int64 holds, with ErrNotNumber and the float left as it was,
// where Go's conversion would return a platform's garbage (MinInt64 on
// amd64); that the sums at the edges of int64's range are returned; and
// that IncrFloat and IncrInitNum still add to such a float.
func TestIncrFloatBeyondInt(t *testing.T) {
	d, _ := openTest(t, Options{})
	const maxBelow = 0x1p63 - 1024 // the largest float64 below 2^63
	tests := []struct {
		name   string
		stored float64
		delta  int64
		want   int64 // when ok
		ok     bool
	}{
		{"1e19", 1e19, 0, 0, false},
		{"-1e19", -1e19, 0, 0, false},
		{"+inf", math.Inf(1), 1, 0, false},
		{"-inf", math.Inf(-1), 1, 0, false},
		{"NaN", math.NaN(), 1, 0, false},
		{"0 plus MaxInt64 is 2^63", 0, math.MaxInt64, 0, false},
		{"largest below 2^63", maxBelow, 0, maxBelow, true},
		{"-2^63", -0x1p63, 0, math.MinInt64, true},
		{"-2^63 absorbs 1", -0x1p63, 1, math.MinInt64, true},
		{"-2^63 less 2048", -0x1p63, -2048, 0, false}, // the next float down
		{"fraction truncates toward zero", -2.5, 1, -1, true},
	}
	for _, tt := range tests {
		for _, op := range []struct {
			name string
			incr func(key string, delta int64) (int64, error)
		}{
			{"Incr", d.Incr},
			{"IncrInit", func(key string, delta int64) (int64, error) {
				n, _, err := d.IncrInit(key, delta, 5, 0)
				return n, err
			}},
		} {
			t.Run(op.name+"/"+tt.name, func(t *testing.T) {
				specSet(t, d, "f", Float(tt.stored), time.Hour, 3)
				n, err := op.incr("f", tt.delta)
				if !tt.ok {
					if !errors.Is(err, ErrNotNumber) {
						t.Fatalf("%s(\"f\", %d) on %v = %d, %v; want ErrNotNumber", op.name, tt.delta, tt.stored, n, err)
					}
					wantGet(t, d, "f", Float(tt.stored), 3) // nothing written (I3)
					return
				}
				if err != nil || n != tt.want {
					t.Fatalf("%s(\"f\", %d) on %v = %d, %v; want %d, <nil>", op.name, tt.delta, tt.stored, n, err, tt.want)
				}
				wantGet(t, d, "f", Float(tt.stored+float64(tt.delta)), 3)
			})
		}
	}
	// The float forms add to it.
	specSet(t, d, "f", Float(1e19), 0, 0)
	if f, err := d.IncrFloat("f", 1e19); f != 2e19 || err != nil {
		t.Errorf("IncrFloat(\"f\", 1e19) on 1e19 = %v, %v; want 2e19, <nil>", f, err)
	}
	if f, _, err := d.IncrInitNum("f", -1, 0, 0); f != 2e19 || err != nil {
		t.Errorf("IncrInitNum(\"f\", -1) on 2e19 = %v, %v; want 2e19, <nil>", f, err)
	}
}

func TestUpdate(t *testing.T) {
	d, c := openTest(t, Options{})
	// Create.
	err := d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if ok {
			t.Errorf("Update(\"k\") on an absent key: fn got ok = true, %v", cur)
		}
		return Int(1), time.Minute, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") create = %v", err)
	}
	wantGet(t, d, "k", Int(1), 0)
	if ttl, err := d.TTL("k"); ttl != time.Minute || err != nil {
		t.Fatalf("TTL(\"k\") = %v, %v; want 1m, <nil>", ttl, err)
	}
	// Modify: the flags stay, the kind may change.
	specSet(t, d, "k", Int(41), 0, 8)
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if !ok || !cur.Equal(Int(41)) {
			t.Errorf("Update(\"k\") fn got %v, %v; want 41, true", cur, ok)
		}
		return String(fmt.Sprint(cur.Int() + 1)), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") modify = %v", err)
	}
	wantGet(t, d, "k", String("42"), 8)
	// A bytes cur holds the stored value.
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if !ok || cur.String() != "42" {
			t.Errorf("Update(\"k\") fn got %q, %v; want \"42\", true", cur.String(), ok)
		}
		return String(cur.String() + strings.Repeat("!", 500)), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"k\") grow = %v", err)
	}
	wantGet(t, d, "k", String("42"+strings.Repeat("!", 500)), 8)
	// Delete.
	err = d.Update("k", func(cur Value, ok bool) (Value, time.Duration, bool) { return Value{}, 0, false })
	if err != nil {
		t.Fatalf("Update(\"k\") delete = %v", err)
	}
	wantGetErr(t, d, "k", ErrNotFound)
	// keep=false on an absent key does nothing.
	err = d.Update("absent", func(cur Value, ok bool) (Value, time.Duration, bool) { return Value{}, 0, false })
	if err != nil {
		t.Fatalf("Update(\"absent\") keep=false = %v", err)
	}
	wantGetErr(t, d, "absent", ErrNotFound)
	// An expired key reads as absent and gets flags 0.
	specSet(t, d, "e", Int(5), time.Millisecond, 9)
	c.Advance(time.Millisecond)
	err = d.Update("e", func(cur Value, ok bool) (Value, time.Duration, bool) {
		if ok {
			t.Errorf("Update(\"e\") on an expired key: fn got ok = true, %v", cur)
		}
		return Int(6), 0, true
	})
	if err != nil {
		t.Fatalf("Update(\"e\") = %v", err)
	}
	wantGet(t, d, "e", Int(6), 0)
	// A list is refused before fn runs.
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	err = d.Update("l", func(cur Value, ok bool) (Value, time.Duration, bool) {
		t.Errorf("Update(\"l\") on a list called fn")
		return Int(1), 0, true
	})
	wantErr(t, `Update("l") on a list`, err, ErrIsList)
	// A panic in fn releases the lock and goes on.
	specSet(t, d, "p", Int(1), 0, 0)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("Update(\"p\") with a panicking fn: recovered %v, want boom", r)
			}
		}()
		d.Update("p", func(Value, bool) (Value, time.Duration, bool) { panic("boom") })
		t.Fatalf("Update(\"p\") returned after fn panicked")
	}()
	wantGet(t, d, "p", Int(1), 0)
	if n, err := d.Incr("p", 1); n != 2 || err != nil {
		t.Fatalf("Incr(\"p\", 1) after a panic in Update = %d, %v; want 2, <nil>", n, err)
	}
}

func TestCompareAndSwap(t *testing.T) {
	d, c := openTest(t, Options{})
	specSet(t, d, "k", Int(1), 0, 5)
	if ok, err := d.CompareAndSwap("k", Int(1), String("two"), time.Second); !ok || err != nil {
		t.Fatalf("CompareAndSwap(\"k\", 1, two) = %v, %v; want true, <nil>", ok, err)
	}
	wantGet(t, d, "k", String("two"), 5)
	if ttl, err := d.TTL("k"); ttl != time.Second || err != nil {
		t.Fatalf("TTL(\"k\") = %v, %v; want 1s, <nil>", ttl, err)
	}
	for _, old := range []Value{String("one"), Int(1), String("tw"), String("two\x00"), Bool(true)} {
		if ok, err := d.CompareAndSwap("k", old, Int(3), 0); ok || err != nil {
			t.Fatalf("CompareAndSwap(\"k\", %s %q, 3) on two = %v, %v; want false, <nil>", old.Kind(), old, ok, err)
		}
	}
	wantGet(t, d, "k", String("two"), 5)
	// Same number, other kind.
	specSet(t, d, "n", Float(1), 0, 0)
	if ok, err := d.CompareAndSwap("n", Int(1), Int(2), 0); ok || err != nil {
		t.Fatalf("CompareAndSwap(\"n\", int 1, 2) on float 1 = %v, %v; want false, <nil>", ok, err)
	}
	if ok, err := d.CompareAndSwap("n", Float(1), Int(2), 0); !ok || err != nil {
		t.Fatalf("CompareAndSwap(\"n\", float 1, 2) on float 1 = %v, %v; want true, <nil>", ok, err)
	}
	wantGet(t, d, "n", Int(2), 0)
	if ok, err := d.CompareAndSwap("absent", Int(1), Int(2), 0); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("CompareAndSwap(\"absent\") = %v, %v; want false, %v", ok, err, ErrNotFound)
	}
	c.Advance(time.Second)
	if ok, err := d.CompareAndSwap("k", String("two"), Int(2), 0); ok || !errors.Is(err, ErrNotFound) {
		t.Fatalf("CompareAndSwap(\"k\") expired = %v, %v; want false, %v", ok, err, ErrNotFound)
	}
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatalf("LPush = %v", err)
	}
	if ok, err := d.CompareAndSwap("l", Int(1), Int(2), 0); ok || !errors.Is(err, ErrIsList) {
		t.Fatalf("CompareAndSwap(\"l\") on a list = %v, %v; want false, %v", ok, err, ErrIsList)
	}
}
