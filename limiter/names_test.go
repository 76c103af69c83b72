package limiter

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"login", true},
		{"api-v2/users:read", true},
		{"{tenant}.é", true},
		{strings.Repeat("n", MaxNameLen), true},
		{"", false},
		{strings.Repeat("n", MaxNameLen+1), false},
		{"a|b", false},
		{"|", false},
		{"tab\there", false},
		{"nl\n", false},
		{"nul\x00", false},
		{"del\x7f", false},
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadName)) {
			t.Errorf("CheckName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	d, _ := newDict(t)
	news := map[string]func(name string) error{
		"NewReq":           func(n string) error { _, err := NewReq(d, n, 1, 1); return err },
		"NewCount":         func(n string) error { _, err := NewCount(d, n, 1, time.Second); return err },
		"NewConn":          func(n string) error { _, err := NewConn(d, n, 1, 0, 0); return err },
		"NewLeasedConn":    func(n string) error { _, err := NewLeasedConn(d, n, 1, 0, 0, time.Second); return err },
		"NewSlidingWindow": func(n string) error { _, err := NewSlidingWindow(d, n, 1, time.Second); return err },
		"NewGCRA":          func(n string) error { _, err := NewGCRA(d, n, 1, 1); return err },
	}
	for fn, f := range news {
		for _, name := range []string{"", "a|b"} {
			if err := f(name); !errors.Is(err, ErrBadName) {
				t.Errorf("%s(%q) = %v, want ErrBadName", fn, name, err)
			}
		}
		if err := f("ok"); err != nil {
			t.Errorf("%s(%q) = %v", fn, "ok", err)
		}
	}
}

// TestZoneKeys pins the zone keys of every kind: "kind|name|key". A
// change would make processes of two releases count apart.
func TestZoneKeys(t *testing.T) {
	d, _ := newDict(t)
	ctx := context.Background()
	req, _ := NewReq(d, "n", 1, 1)
	count, _ := NewCount(d, "n", 1, time.Hour)
	conn, _ := NewConn(d, "n", 1, 0, 0)
	leased, _ := NewLeasedConn(d, "n", 1, 0, 0, time.Hour)
	sw, _ := NewSlidingWindow(d, "n", 1, time.Hour)
	gcra, _ := NewGCRA(d, "n", 1, 1)
	long := strings.Repeat("k", 2*keyBufSize) // built on the heap
	for _, l := range []Limiter{req, count, conn, leased, sw, gcra} {
		for _, key := range []string{"192.0.2.1", long} {
			if _, err := l.Incoming(ctx, key, true); err != nil {
				t.Fatalf("%T.Incoming(%.20q): %v", l, key, err)
			}
		}
	}
	got, err := d.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, kind := range []string{"req", "count", "conn", "lconn", "sw", "gcra"} {
		want = append(want, kind+"|n|192.0.2.1", kind+"|n|"+long)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("zone keys = %.300q, want %.300q", got, want)
	}
}

// TestNamesShareAndSeparate: limiters of one kind and name over one zone
// share each key's state, whichever mapping of the zone they use (as
// processes do); another name, or another kind under the same name, keeps
// state of its own, and never finds a foreign value (ErrAbused).
func TestNamesShareAndSeparate(t *testing.T) {
	clk := new(fakeClock)
	d1 := newDictClock(t, clk)
	d2, err := dict.Open(d1.Path(), dict.Options{Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	ctx := context.Background()
	a1, _ := NewCount(d1, "login", 3, time.Minute)
	a2, _ := NewCount(d2, "login", 3, time.Minute) // the same limiter, another mapping
	other, _ := NewCount(d1, "api", 100, time.Minute)
	// Every other kind under the same name: state of its own.
	req, _ := NewReq(d1, "login", 1, 100)
	conn, _ := NewConn(d1, "login", 100, 0, 0)
	leased, _ := NewLeasedConn(d1, "login", 100, 0, 0, time.Hour)
	sw, _ := NewSlidingWindow(d1, "login", 100, time.Minute)
	gcra, _ := NewGCRA(d1, "login", 1, 100)
	for range 5 {
		for _, l := range []Limiter{other, req, conn, leased, sw, gcra} {
			if dec, err := l.Incoming(ctx, "k", true); err != nil || !dec.Allowed {
				t.Fatalf("%T.Incoming = %+v, %v; want allowed", l, dec, err)
			}
		}
	}
	var allowed []bool
	for _, l := range []*Count{a1, a2, a1, a2, a1} {
		dec, err := l.Incoming(ctx, "k", true)
		if err != nil {
			t.Fatal(err)
		}
		allowed = append(allowed, dec.Allowed)
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(allowed, want) {
		t.Errorf("login's decisions across two mappings = %v, want %v: one limit of 3", allowed, want)
	}
	if dec, _ := other.Incoming(ctx, "k", false); dec.Remaining != 94 {
		t.Errorf("api's remaining = %d, want 94: its own 5 requests and this one", dec.Remaining)
	}
}
