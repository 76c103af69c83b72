package limiter

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

func TestLeaseRenew(t *testing.T) {
	const lease = 10 * time.Second
	for _, renew := range []bool{true, false} {
		name := map[bool]string{true: "renewed", false: "not renewed"}[renew]
		t.Run(name, func(t *testing.T) {
			d, clk := newDict(t)
			holder, _ := NewLeasedConn(d, "t", 1, 0, 0, lease)
			other, _ := NewLeasedConn(d, "t", 1, 0, 0, lease)
			ctx := context.Background()
			allowed := func(at int64) bool {
				t.Helper()
				clk.at(at)
				dec, err := other.Incoming(ctx, "k", false)
				if err != nil {
					t.Fatal(err)
				}
				return dec.Allowed
			}
			if dec, _ := holder.Incoming(ctx, "k", true); !dec.Allowed {
				t.Fatal("first request rejected")
			}
			clk.at(9000)
			if renew {
				if err := holder.Renew(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if renew {
				// Renewed at +9 s: held until +19 s.
				if allowed(15000) || allowed(18999) || !allowed(19000) {
					t.Errorf("a renewed slot was not held exactly until +19 s")
				}
				return
			}
			// The documented trade-off: a request that outlives its lease
			// unrenewed loses its slot, and its Leaving finds none.
			if !allowed(10000) {
				t.Errorf("an unrenewed slot still held after its lease")
			}
			if _, err := holder.Leaving(ctx, "k", 0); !errors.Is(err, ErrNotFound) {
				t.Errorf("Leaving after the lease = %v, want ErrNotFound", err)
			}
			if err := holder.Renew(ctx); err != nil || len(holder.lease.held) != 0 {
				t.Errorf("Renew after the lease = %v, held %v; want nothing left to renew", err, holder.lease.held)
			}
		})
	}
}

func TestLeaseHolders(t *testing.T) {
	d, _ := newDict(t)
	ctx := context.Background()
	conns := make([]*Conn, MaxHolders+1)
	for i := range conns {
		conns[i], _ = NewLeasedConn(d, "t", 1000, 0, 0, time.Minute)
	}
	for i, c := range conns[:MaxHolders] {
		for range 2 {
			if dec, err := c.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
				t.Fatalf("holder %d: %+v, %v", i, dec, err)
			}
		}
	}
	if dec, _ := conns[0].Incoming(ctx, "k", false); dec.State != 2*MaxHolders+1 {
		t.Errorf("dry run state = %v, want %d", dec.State, 2*MaxHolders+1)
	}
	last := conns[MaxHolders]
	if _, err := last.Incoming(ctx, "k", true); !errors.Is(err, ErrTooManyHolders) {
		t.Errorf("holder %d: %v, want ErrTooManyHolders", MaxHolders+1, err)
	}
	// A holder that leaves its last slot makes room.
	for range 2 {
		if _, err := conns[3].Leaving(ctx, "k", 0); err != nil {
			t.Fatal(err)
		}
	}
	if dec, err := last.Incoming(ctx, "k", true); err != nil || !dec.Allowed || dec.State != 2*MaxHolders-1 {
		t.Errorf("holder %d after one left: %+v, %v", MaxHolders+1, dec, err)
	}
}

// TestLeasedConnSaturatedSlots: live slots that sum to MaxInt64 (scan
// saturates; a record no Conn writes) fill even a limit of MaxInt64: the
// next request is rejected, dry or not, rather than wrapping total+1.
func TestLeasedConnSaturatedSlots(t *testing.T) {
	for _, commit := range []bool{false, true} {
		d, _ := newDict(t)
		l, _ := NewLeasedConn(d, "t", 2, math.MaxInt64, 0, time.Minute)
		var b [leaseSize]byte
		putLease(b[:], lease{holder: 42, slots: math.MaxInt64, expiry: t0 + 60_000})
		if _, err := d.Set(zoneKey(l, "k"), dict.Bytes(b[:]), time.Minute, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := l.Incoming(context.Background(), "k", commit); err != nil || got.Allowed {
			t.Errorf("Incoming(\"k\", commit %v) over MaxInt64 live slots = %+v, %v; want rejected", commit, got, err)
		}
	}
}

// TestLeasedConnFarExpiry: a record whose lease ends far ahead (none a Conn
// writes, which renews to now+lease) still decides, and the key's TTL is
// clamped to maxTTL instead of wrapping negative in ms to ns.
func TestLeasedConnFarExpiry(t *testing.T) {
	for _, expiry := range []int64{math.MaxInt64, t0 + 300*365*24*3600*1000} {
		d, _ := newDict(t)
		l, _ := NewLeasedConn(d, "t", 3, 0, 0, time.Minute)
		var b [leaseSize]byte
		putLease(b[:], lease{holder: 42, slots: 1, expiry: expiry})
		if _, err := d.Set(zoneKey(l, "k"), dict.Bytes(b[:]), 0, 0); err != nil {
			t.Fatal(err)
		}
		got, err := l.Incoming(context.Background(), "k", true)
		if err != nil || !got.Allowed || got.State != 2 {
			t.Errorf("Incoming(\"k\") beside a lease to %d = %+v, %v; want allowed, 2 in flight", expiry, got, err)
		}
		if ttl, err := d.TTL(zoneKey(l, "k")); err != nil || ttl <= 0 || ttl > maxTTL {
			t.Errorf("TTL of the key beside a lease to %d = %v, %v; want within (0, %v]", expiry, ttl, err, maxTTL)
		}
	}
}
