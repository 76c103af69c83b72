package limiter

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func TestLeaseRenew(t *testing.T) {
	const lease = 10 * time.Second
	for _, renew := range []bool{true, false} {
		name := map[bool]string{true: "renewed", false: "not renewed"}[renew]
		t.Run(name, func(t *testing.T) {
			d, clk := zonetest.Open(t, dict.Options{})
			holder, _ := NewLeasedConn(d, "t", 1, 0, 0, lease)
			other, _ := NewLeasedConn(d, "t", 1, 0, 0, lease)
			ctx := context.Background()
			allowed := func(at int64) bool {
				t.Helper()
				clk.SetMilli(at)
				dec, err := other.Incoming(ctx, "k", false)
				if err != nil {
					t.Fatal(err)
				}
				return dec.Allowed
			}
			if dec, _ := holder.Incoming(ctx, "k", true); !dec.Allowed {
				t.Fatal("first request rejected")
			}
			clk.SetMilli(9000)
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
	d, _ := zonetest.Open(t, dict.Options{})
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

// TestLeasedConnRecordContents gives a leased key records of the right
// size with extreme contents. Records no Conn writes are ErrBadState for
// every call, and stay as they were. Records at the edge of what a Conn
// writes are decided on.
func TestLeasedConnRecordContents(t *testing.T) {
	const day = 24 * 3600 * 1000
	now := t0
	ctx := context.Background()
	tests := []struct {
		name   string
		r      lease
		bad    bool
		inUse  float64 // for a good record: the State of a dry run, live slots and this one
		maxTTL time.Duration
	}{
		{name: "slots 2^63-1", r: lease{holder: 42, slots: math.MaxInt64, expiry: now + 60_000}, bad: true},
		{name: "slots 2^53+1", r: lease{holder: 42, slots: 1<<53 + 1, expiry: now + 60_000}, bad: true},
		{name: "slots 0", r: lease{holder: 42, slots: 0, expiry: now + 60_000}, bad: true},
		{name: "slots -1", r: lease{holder: 42, slots: -1, expiry: now + 60_000}, bad: true},
		{name: "slots -2^63", r: lease{holder: 42, slots: math.MinInt64, expiry: now + 60_000}, bad: true},
		{name: "expiry 2^63-1", r: lease{holder: 42, slots: 1, expiry: math.MaxInt64}, bad: true},
		{name: "expiry two days and 1 ms ahead", r: lease{holder: 42, slots: 1, expiry: now + 2*day + 1}, bad: true},
		// A day's lease written by a clock a day ahead.
		{name: "expiry two days ahead", r: lease{holder: 42, slots: 1, expiry: now + 2*day}, inUse: 3, maxTTL: 2 * 24 * time.Hour},
		{name: "slots 2^53", r: lease{holder: 42, slots: 1 << 53, expiry: now + 60_000}, inUse: 1<<53 + 2, maxTTL: time.Minute},
		// An expired record a write has not dropped yet.
		{name: "expired", r: lease{holder: 42, slots: 5, expiry: 0}, inUse: 2, maxTTL: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := NewLeasedConn(d, "t", 2, math.MaxInt64, 0, time.Minute)
			zk := zoneKey(l, "k")
			var b [2 * leaseSize]byte
			putLease(b[:], lease{holder: 7, slots: 1, expiry: now + 1000}) // an honest record beside it
			putLease(b[leaseSize:], tt.r)
			v := dict.Bytes(b[:])
			if _, err := d.Set(zk, v, time.Hour, 0); err != nil {
				t.Fatal(err)
			}
			dry, err := l.Incoming(ctx, "k", false)
			if !tt.bad {
				if err != nil || !dry.Allowed || dry.State != tt.inUse {
					t.Fatalf("Incoming(dry) = %+v, %v; want allowed with State %v", dry, err, tt.inUse)
				}
				if dec, err := l.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
					t.Fatalf("Incoming(commit) = %+v, %v; want allowed", dec, err)
				}
				if ttl, err := d.TTL(zk); err != nil || ttl <= 0 || ttl > tt.maxTTL {
					t.Errorf("TTL = %v, %v; want within (0, %v]", ttl, err, tt.maxTTL)
				}
				return
			}
			if !errors.Is(err, ErrBadState) || errors.Is(err, ErrAbused) || dry != (Decision{}) {
				t.Errorf("Incoming(dry) = %+v, %v; want ErrBadState", dry, err)
			}
			if dec, err := l.Incoming(ctx, "k", true); !errors.Is(err, ErrBadState) || dec != (Decision{}) {
				t.Errorf("Incoming(commit) = %+v, %v; want ErrBadState", dec, err)
			}
			if _, err := l.Leaving(ctx, "k", 0); !errors.Is(err, ErrBadState) {
				t.Errorf("Leaving = %v, want ErrBadState", err)
			}
			if got, _, err := d.Get(zk); err != nil || !got.Equal(v) {
				t.Errorf("value afterwards = %v, %v; want it unchanged", got, err)
			}
		})
	}
}

// TestLeaseTooLong: a lease longer than a day is refused, so that no
// record expires further ahead than a day past its write.
func TestLeaseTooLong(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	if _, err := NewLeasedConn(d, "t", 1, 0, 0, 24*time.Hour); err != nil {
		t.Errorf("NewLeasedConn(lease a day) = %v, want nil", err)
	}
	if _, err := NewLeasedConn(d, "t", 1, 0, 0, 24*time.Hour+time.Millisecond); !errors.Is(err, ErrBadDelay) {
		t.Errorf("NewLeasedConn(lease a day and 1 ms) = %v, want ErrBadDelay", err)
	}
}
