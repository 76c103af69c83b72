package counter_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// The tests' zones open with zonetest.Open, on its fake clock: the
// counter reads no time, and a dict with an injected clock starts no
// coarse-clock goroutine, which keeps goroutine counts exact.

// newCounter returns a Counter over a new 1 MiB zone that syncs by hand.
func newCounter(t testing.TB) (*counter.Counter, *dict.Dict) {
	t.Helper()
	d, _ := zonetest.Open(t, dict.Options{})
	c, err := counter.New(d, 0)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, d
}

// key returns the i-th test key, 16 bytes long.
func key(i int) string { return fmt.Sprintf("key:%011d", i) }

func mustSync(t testing.TB, c *counter.Counter) {
	t.Helper()
	if err := c.Sync(); err != nil {
		t.Fatalf("Sync() = %v", err)
	}
}

// wantGet checks the zone's count of key: want, or the error wantErr.
func wantGet(t testing.TB, c *counter.Counter, key string, want int64, wantErr error) {
	t.Helper()
	got, err := c.Get(key)
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Errorf("Get(%q) = %d, %v; want %v", key, got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("Get(%q) = %d, %v; want %d", key, got, err, want)
	}
}

func TestNew(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	tests := []struct {
		name     string
		d        *dict.Dict
		interval time.Duration
		want     error
	}{
		{"by hand", d, 0, nil},
		{"timer", d, time.Second, nil},
		{"nil dict", nil, 0, counter.ErrNilDict},
		{"negative interval", d, -1, counter.ErrBadInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := counter.New(tt.d, tt.interval)
			if !errors.Is(err, tt.want) || (err == nil) != (c != nil) {
				t.Fatalf("New() = %v, %v; want %v", c, err, tt.want)
			}
			if c != nil {
				if err := c.Close(); err != nil {
					t.Errorf("Close() = %v", err)
				}
			}
		})
	}
}

// TestIncrSync runs increments, syncs and resets and reads the zone after
// each step.
func TestIncrSync(t *testing.T) {
	type step struct {
		op   string // incr, sync, reset
		key  string
		n    int64
		want int64 // incr: ignored; reset: its result
	}
	type count struct {
		key  string
		want int64
		err  error
	}
	tests := []struct {
		name  string
		steps []step
		want  []count
	}{
		{"unsynced is invisible", []step{{"incr", "a", 1, 0}, {"incr", "a", 2, 0}},
			[]count{{"a", 0, dict.ErrNotFound}}},
		{"sync writes the sum", []step{{"incr", "a", 1, 0}, {"incr", "a", 2, 0}, {"incr", "b", -4, 0}, {"sync", "", 0, 0}},
			[]count{{"a", 3, nil}, {"b", -4, nil}}},
		{"syncs add up", []step{{"incr", "a", 1, 0}, {"sync", "", 0, 0}, {"incr", "a", 10, 0}, {"sync", "", 0, 0}, {"sync", "", 0, 0}},
			[]count{{"a", 11, nil}}},
		{"a zero sum is not written", []step{{"incr", "a", 5, 0}, {"incr", "a", -5, 0}, {"sync", "", 0, 0}},
			[]count{{"a", 0, dict.ErrNotFound}}},
		{"reset an absent key", []step{{"reset", "a", 7, 0}},
			[]count{{"a", 0, nil}}},
		{"reset subtracts", []step{{"incr", "a", 18, 0}, {"sync", "", 0, 0}, {"reset", "a", 10, 8}},
			[]count{{"a", 8, nil}}},
		{"unsynced increments land after a reset", []step{{"incr", "a", 18, 0}, {"sync", "", 0, 0}, {"incr", "a", 3, 0}, {"reset", "a", 18, 0}, {"sync", "", 0, 0}},
			[]count{{"a", 3, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCounter(t)
			for _, s := range tt.steps {
				switch s.op {
				case "incr":
					c.Incr(s.key, s.n)
				case "sync":
					mustSync(t, c)
				case "reset":
					if got, err := c.Reset(s.key, s.n); err != nil || got != s.want {
						t.Fatalf("Reset(%q, %d) = %d, %v; want %d", s.key, s.n, got, err, s.want)
					}
				}
			}
			for _, w := range tt.want {
				wantGet(t, c, w.key, w.want, w.err)
			}
		})
	}
}

// TestSyncAddsToFloatBeyondInt checks that Sync adds to a float count that
// no int64 holds, as to any other number: the count's sum is not returned,
// so there is nothing to refuse (dict.IncrInit would).
func TestSyncAddsToFloatBeyondInt(t *testing.T) {
	for _, f := range []float64{1e19, -1e19, math.Inf(1)} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			c, d := newCounter(t)
			if _, err := d.Set("big", dict.Float(f), 0, 0); err != nil {
				t.Fatal(err)
			}
			c.Incr("big", 1<<20)
			if err := c.Sync(); err != nil {
				t.Fatalf("Sync() = %v, want <nil>", err)
			}
			if v, _, err := d.Get("big"); err != nil || !v.Equal(dict.Float(f+1<<20)) {
				t.Errorf("Get(big) after Sync = %v, %v; want %v", v, err, f+1<<20)
			}
		})
	}
}

func TestGet(t *testing.T) {
	c, d := newCounter(t)
	d.Set("i", dict.Int(-3), 0, 0)
	d.Set("f", dict.Float(2.75), 0, 0)
	d.Set("s", dict.String("12"), 0, 0)
	d.Set("b", dict.Bool(true), 0, 0)
	d.Set("big", dict.Float(1e19), 0, 0)
	d.Set("-inf", dict.Float(math.Inf(-1)), 0, 0)
	d.Set("nan", dict.Float(math.NaN()), 0, 0)
	tests := []struct {
		key  string
		want int64
		err  error
	}{
		{"i", -3, nil},
		{"f", 2, nil},
		{"big", math.MaxInt64, nil}, // a float count beyond int64 is clamped
		{"-inf", math.MinInt64, nil},
		{"nan", 0, nil},
		{"s", 0, dict.ErrNotNumber},
		{"b", 0, dict.ErrNotNumber},
		{"none", 0, dict.ErrNotFound},
		{"", 0, dict.ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.key), func(t *testing.T) { wantGet(t, c, tt.key, tt.want, tt.err) })
	}
}

func TestKeys(t *testing.T) {
	c, _ := newCounter(t)
	for _, k := range []string{"x", "y", "z"} {
		c.Incr(k, 1)
	}
	if keys, err := c.Keys(0); err != nil || len(keys) != 0 {
		t.Fatalf("Keys(0) before Sync = %q, %v; want none", keys, err)
	}
	mustSync(t, c)
	keys, err := c.Keys(0)
	slices.Sort(keys)
	if err != nil || !reflect.DeepEqual(keys, []string{"x", "y", "z"}) {
		t.Errorf("Keys(0) = %q, %v; want [x y z]", keys, err)
	}
	if keys, err := c.Keys(2); err != nil || len(keys) != 2 {
		t.Errorf("Keys(2) = %q, %v; want 2 keys", keys, err)
	}
}

// TestHandle mixes a Handle's Add with Incr of its key.
func TestHandle(t *testing.T) {
	c, _ := newCounter(t)
	h := c.Key("hot")
	if h.Name() != "hot" {
		t.Errorf("Name() = %q, want hot", h.Name())
	}
	h.Add(2)
	c.Incr("hot", 3)
	if h2 := c.Key("hot"); h2.Name() != "hot" {
		t.Errorf("second Key(hot).Name() = %q", h2.Name())
	} else {
		h2.Add(5)
	}
	wantGet(t, c, "hot", 0, dict.ErrNotFound)
	mustSync(t, c)
	wantGet(t, c, "hot", 10, nil)
	h.Add(-1)
	mustSync(t, c)
	wantGet(t, c, "hot", 9, nil)
	if st := c.Stats(); st.Writes != 2 || st.Keys != 1 || st.Syncs != 2 {
		t.Errorf("Stats() = %+v; want 2 writes, 1 key, 2 syncs", st)
	}
}

func TestClose(t *testing.T) {
	c, d := newCounter(t)
	c.Incr("a", 4)
	c.Key("h").Add(1)
	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	for _, k := range []string{"a", "h"} {
		if v, _, err := d.Get(k); err != nil || v.Int() == 0 {
			t.Errorf("dict Get(%q) after Close = %v, %v; want the flushed count", k, v, err)
		}
	}
	if err := c.Sync(); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("Sync() after Close = %v, want %v", err, counter.ErrClosed)
	}
	if _, err := c.Get("a"); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("Get() after Close = %v, want %v", err, counter.ErrClosed)
	}
	if _, err := c.Reset("a", 1); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("Reset() after Close = %v, want %v", err, counter.ErrClosed)
	}
	if _, err := c.Keys(0); !errors.Is(err, counter.ErrClosed) {
		t.Errorf("Keys() after Close = %v, want %v", err, counter.ErrClosed)
	}
	// An increment after Close stays in memory: the zone keeps 4.
	c.Incr("a", 100)
	c.Close()
	if v, _, err := d.Get("a"); err != nil || v.Int() != 4 {
		t.Errorf("dict Get(a) after Incr past Close = %v, %v; want 4", v, err)
	}
}
