package limiter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
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
	d, _ := zonetest.Open(t, dict.Options{})
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

// TestZoneKeys pins the zone keys of every kind: "kind|name|key", and
// each limiter's record of its parameters, "meta|kind|name". A change
// would make processes of two releases count apart.
func TestZoneKeys(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
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
		want = append(want, kind+"|n|192.0.2.1", kind+"|n|"+long, "meta|"+kind+"|n")
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
	d1, clk := zonetest.Open(t, dict.Options{})
	d2, _ := zonetest.OpenAt(t, d1.Path(), dict.Options{Clock: clk.UnixMilli}) // another mapping
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

// TestNameClash: in one process, a second limiter of one kind and name
// over one zone is refused when its parameters differ, and allowed when
// they are the same, over any mapping of the zone.
func TestNameClash(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	d2, _ := zonetest.OpenAt(t, d.Path(), dict.Options{Clock: clk.UnixMilli}) // the same zone, another mapping
	type build func(d *dict.Dict) (Limiter, error)
	kinds := []struct {
		kind        string
		first, same build
		others      []build // each differs from first in one parameter
	}{
		{"req",
			func(d *dict.Dict) (Limiter, error) { return NewReq(d, "api", 10, 5) },
			func(d *dict.Dict) (Limiter, error) { return NewReq(d, "api", 10, 5) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewReq(d, "api", 11, 5) },
				func(d *dict.Dict) (Limiter, error) { return NewReq(d, "api", 10, 4) },
			}},
		{"count",
			func(d *dict.Dict) (Limiter, error) { return NewCount(d, "api", 5, time.Minute) },
			func(d *dict.Dict) (Limiter, error) { return NewCount(d, "api", 5, time.Minute) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewCount(d, "api", 3, time.Minute) },
				func(d *dict.Dict) (Limiter, error) { return NewCount(d, "api", 5, time.Hour) },
			}},
		{"conn",
			func(d *dict.Dict) (Limiter, error) { return NewConn(d, "api", 5, 1, time.Second) },
			func(d *dict.Dict) (Limiter, error) { return NewConn(d, "api", 5, 1, time.Second) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewConn(d, "api", 6, 1, time.Second) },
				func(d *dict.Dict) (Limiter, error) { return NewConn(d, "api", 5, 0, time.Second) },
				func(d *dict.Dict) (Limiter, error) { return NewConn(d, "api", 5, 1, time.Minute) },
			}},
		{"lconn",
			func(d *dict.Dict) (Limiter, error) { return NewLeasedConn(d, "api", 5, 1, time.Second, time.Minute) },
			func(d *dict.Dict) (Limiter, error) { return NewLeasedConn(d, "api", 5, 1, time.Second, time.Minute) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewLeasedConn(d, "api", 6, 1, time.Second, time.Minute) },
				func(d *dict.Dict) (Limiter, error) { return NewLeasedConn(d, "api", 5, 1, time.Second, time.Hour) },
			}},
		{"sw",
			func(d *dict.Dict) (Limiter, error) { return NewSlidingWindow(d, "api", 5, time.Minute) },
			func(d *dict.Dict) (Limiter, error) { return NewSlidingWindow(d, "api", 5, time.Minute) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewSlidingWindow(d, "api", 3, time.Minute) },
				func(d *dict.Dict) (Limiter, error) { return NewSlidingWindow(d, "api", 5, time.Second) },
			}},
		{"gcra",
			func(d *dict.Dict) (Limiter, error) { return NewGCRA(d, "api", 10, 5) },
			func(d *dict.Dict) (Limiter, error) { return NewGCRA(d, "api", 10, 5) },
			[]build{
				func(d *dict.Dict) (Limiter, error) { return NewGCRA(d, "api", 20, 5) },
				func(d *dict.Dict) (Limiter, error) { return NewGCRA(d, "api", 10, 6) },
			}},
	}
	var keep []Limiter // the limiters stay live through the test
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			first, err := k.first(d)
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, first)
			for _, dd := range []*dict.Dict{d, d2} {
				l, err := k.same(dd)
				if err != nil {
					t.Errorf("the same limiter again = %v, want nil", err)
				}
				keep = append(keep, l)
			}
			for i, b := range k.others {
				for j, dd := range []*dict.Dict{d, d2} {
					_, err := b(dd)
					if !errors.Is(err, ErrNameClash) {
						t.Errorf("other parameters %d on mapping %d = %v, want ErrNameClash", i, j, err)
						continue
					}
					if msg := err.Error(); !strings.Contains(msg, k.kind+` "api"`) {
						t.Errorf("error %q does not name %s %q", msg, k.kind, "api")
					}
				}
				// Another zone is another limiter.
				another, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
				l, err := b(another)
				if err != nil {
					t.Errorf("other parameters %d over another zone = %v, want nil", i, err)
				}
				keep = append(keep, l)
			}
		})
	}
	runtime.KeepAlive(keep)
}

// TestNameClashMessage: the error of a copied limiter names it and both
// sets of parameters, and the copy never decides.
func TestNameClashMessage(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	api, err := NewCount(d, "api", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	login, err := NewCount(d, "api", 3, time.Minute) // copied for /login
	if login != nil || !errors.Is(err, ErrNameClash) {
		t.Fatalf("NewCount(api, 3) = %v, %v; want nil, ErrNameClash", login, err)
	}
	want := `limiter: name clash: count "api" is built over zone ` + d.Path() + ` with limit 5 per 1m0s; this one has limit 3 per 1m0s`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	runtime.KeepAlive(api)
}

// TestNameClashDropped: a limiter the process dropped holds its name no
// more, so it can be built again with new parameters. A Conn's SetMax
// changes none of the parameters the name is held with.
func TestNameClashDropped(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	func() {
		if _, err := NewCount(d, "api", 5, time.Minute); err != nil {
			t.Fatal(err)
		}
	}()
	if _, err := NewCount(d, "api", 3, time.Minute); err != nil {
		t.Errorf("NewCount with new parameters after the old one was dropped = %v, want nil", err)
	}
	c, err := NewConn(d, "db", 10, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetMax(20); err != nil {
		t.Fatal(err)
	}
	if _, err := NewConn(d, "db", 10, 0, 0); err != nil {
		t.Errorf("NewConn as built before SetMax = %v, want nil", err)
	}
	runtime.KeepAlive(c)
}

// TestClaimsStayBounded: the record of names forgets the limiters the
// process dropped, so building limiters under ever new names keeps it
// bounded.
func TestClaimsStayBounded(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	for i := range 2000 {
		if _, err := NewCount(d, fmt.Sprint("n", i), 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			runtime.GC()
		}
	}
	claimsMu.Lock()
	n := len(claims)
	claimsMu.Unlock()
	if n > 500 {
		t.Errorf("%d names recorded after 2000 limiters built and dropped, want at most 500", n)
	}
}
