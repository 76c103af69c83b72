package limiter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// TestReset: a key charged until it is rejected decides, once Reset, as a
// key never seen. Reset leaves the limiter's other keys, and a limiter of
// another kind under the same name, as they were. Resetting an absent key
// is no error.
func TestReset(t *testing.T) {
	ctx := context.Background()
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			l := k.mustBuild(t, d)
			other, _ := NewCount(d, "t", 100, time.Hour) // another kind, one name
			if k.name == "count" {
				other, _ = NewCount(d, "u", 100, time.Hour)
			}
			if _, err := other.Incoming(ctx, "k", true); err != nil {
				t.Fatal(err)
			}
			if _, err := l.IncomingN(ctx, "kept", 2, true); err != nil {
				t.Fatal(err)
			}
			kept, _, _ := d.Get(zoneKey(l, "kept"))
			clk.SetMilli(10)
			for i := 0; ; i++ {
				dec, err := l.IncomingN(ctx, "k", 2, true)
				if err != nil {
					t.Fatal(err)
				}
				if !dec.Allowed {
					break
				}
				if i == 100 {
					t.Fatal("never rejected")
				}
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if _, _, err := d.Get(zoneKey(l, "k")); !errors.Is(err, dict.ErrNotFound) {
				t.Errorf("state after Reset: %v, want none", err)
			}
			got, err := l.IncomingN(ctx, "k", 2, true)
			want, err2 := l.IncomingN(ctx, "fresh", 2, true)
			if err != nil || err2 != nil || got != want || !got.Allowed {
				t.Errorf("after Reset: IncomingN = %+v, %v; want a fresh key's %+v, %v", got, err, want, err2)
			}
			if v, _, err := d.Get(zoneKey(l, "kept")); err != nil || !v.Equal(kept) {
				t.Errorf("another key after Reset = %v, %v; want %v", v, err, kept)
			}
			if v, _, err := d.Get(zoneKey(other, "k")); err != nil || v.Int() != 99 {
				t.Errorf("another limiter's key after Reset = %v, %v; want 99", v, err)
			}
			if err := l.Reset(ctx, "absent"); err != nil {
				t.Errorf("Reset of an absent key = %v, want nil", err)
			}
		})
	}
}

// TestResetBadState: Reset deletes a state the limiter cannot have
// written, and the key decides again.
func TestResetBadState(t *testing.T) {
	ctx := context.Background()
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l := k.mustBuild(t, d)
			if _, err := d.Set(zoneKey(l, "k"), dict.String("not a state"), 0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Incoming(ctx, "k", true); !errors.Is(err, ErrBadState) {
				t.Fatalf("Incoming on a string = %v, want ErrBadState", err)
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if dec, err := l.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
				t.Errorf("Incoming after Reset = %+v, %v; want allowed", dec, err)
			}
		})
	}
}

// TestResetLeasedConn: Reset of a leased key frees the slots of every
// holder. A holder whose slots were reset finds none to leave
// (ErrNotFound), and its Renew forgets the key.
func TestResetLeasedConn(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	ctx := context.Background()
	a, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
	b, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
	if dec, _ := a.IncomingN(ctx, "k", 2, true); !dec.Allowed {
		t.Fatal("a: 2 slots rejected")
	}
	if dec, _ := b.IncomingN(ctx, "k", 1, true); !dec.Allowed {
		t.Fatal("b: 1 slot rejected")
	}
	if err := a.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if len(a.lease.held) != 0 {
		t.Errorf("a holds %v after its Reset, want nothing", a.lease.held)
	}
	if _, err := b.Leaving(ctx, "k", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("b.Leaving after Reset = %v, want ErrNotFound", err)
	}
	if dec, _ := b.IncomingN(ctx, "k", 1, true); !dec.Allowed {
		t.Fatal("b: 1 slot rejected after Reset")
	}
	if err := a.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := b.Renew(ctx); err != nil || len(b.lease.held) != 0 {
		t.Errorf("b.Renew after Reset = %v, holding %v; want nil, nothing", err, b.lease.held)
	}
	if dec, _ := a.IncomingN(ctx, "k", 3, true); !dec.Allowed {
		t.Errorf("a: 3 slots rejected after Reset")
	}
}
