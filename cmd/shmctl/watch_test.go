package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// TestWatch drives watch with a sleep that moves the clock and, like a
// program using the zone, increments a key more at each tick (10, 20, 30
// times) and misses one, and adds its counts to the zone (which a program's
// ticker does within a few hundred milliseconds): the rates are exact.
func TestWatch(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	d := h.dict("app")
	defer d.Close()
	ownHits(t, d)
	tick := 0
	h.sleep = func(dur time.Duration) {
		h.advance(dur)
		tick = tick%3 + 1
		for i := 0; i < 10*tick; i++ {
			if _, err := d.Incr("hits", 1); err != nil {
				t.Fatal(err)
			}
		}
		d.Get("absent")
		d.SyncStats() // the program's counts reach the zone at the tick
	}
	plain := h.transcript(
		[]string{"watch", "app", "--count", "3"},
		[]string{"watch", "app", "--count", "3", "--interval", "500ms", "--key", "hits"},
		[]string{"watch", "app", "--count", "1", "--key", "absent"},
	)
	golden(t, "watch", plain)
	if strings.Contains(plain, "\x1b") {
		t.Errorf("watch wrote control codes to a pipe")
	}
	golden(t, "watch_json", h.transcript(
		[]string{"watch", "--json", "--count", "3", "app"},
		[]string{"watch", "--json", "--count", "1", "app", "--key", "hits"},
	))
	h.term = true
	golden(t, "watch_terminal", h.transcript([]string{"watch", "app", "--count", "2", "--key", "hits"}))
	if v, _, _ := d.Get("hits"); v.Int() != 42+10*(4*(1+2+3)+1) { // 13 ticks
		t.Errorf("hits = %d after the watches", v.Int())
	}
}

// ownHits makes "hits" anew in a page of d's own, with its value: d's
// increments then move no entry to its pages (the dict package doc), in a
// race build, where no write is in place and nothing moves, as in any
// other. A process's first entry goes to a page others fill, so d makes
// one first and deletes it.
func ownHits(t *testing.T, d *dict.Dict) {
	t.Helper()
	v, _, err := d.Get("hits")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := d.Set("first", dict.Int(0), 0, 0); return err },
		func() error { return d.Delete("hits") },
		func() error { _, err := d.Set("hits", v, 0, 0); return err },
		func() error { return d.Delete("first") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	d.SyncStats() // before the watch's first sample, which they would skew
}

// TestWatchScreenQuotesZonePath prints, on a terminal, a zone path that is
// not printable text quoted, as info does: the only control codes are the
// screen's own.
func TestWatchScreenQuotesZonePath(t *testing.T) {
	h := newHarness(t)
	name := "e\x1b[31mred"
	h.ok("create", name, "--size", "256K", "--shards", "1")
	h.sleep = h.advance
	h.term = true
	out := h.ok("watch", name, "--count", "1")
	if want := fmt.Sprintf("shmctl watch %q,", h.path(name)); !strings.Contains(out, want) || strings.Contains(out, name) {
		t.Errorf("watch on a terminal wrote %q, want the path quoted: %s", out, want)
	}
}

// TestWatchRatesUseMonotonicClock divides by the interval the monotonic
// clock measured, whatever the wall clock did meanwhile: a one-second
// interval with 10 reads is 10 hits/s when NTP steps the wall clock back or
// forward, and time_ms is the wall clock's.
func TestWatchRatesUseMonotonicClock(t *testing.T) {
	tests := []struct {
		name string
		step time.Duration // of the wall clock, during the interval
	}{
		{"wall clock steady", 0},
		{"wall clock stepped back 900ms", -900 * time.Millisecond},
		{"wall clock stepped back 2s", -2 * time.Second},
		{"wall clock stepped forward 1h", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok("create", "app", "--size", "256K", "--shards", "1")
			d := h.dict("app")
			defer d.Close()
			if _, err := d.Set("k", dict.Int(0), 0, 0); err != nil {
				t.Fatal(err)
			}
			d.SyncStats()
			h.sleep = func(dur time.Duration) {
				h.advance(dur)
				h.stepWall(tt.step)
				for i := 0; i < 10; i++ {
					d.Get("k")
				}
				if _, err := d.Incr("k", 10); err != nil {
					t.Fatal(err)
				}
				d.SyncStats()
			}
			var s watchSample
			out := h.ok("watch", "--json", "--count", "1", "app")
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatal(err)
			}
			// Incr reads the key too: 11 hits in the second.
			if want := epoch + time.Second.Milliseconds() + tt.step.Milliseconds(); s.PerSecond.Hits != 11 || s.TimeMs != want {
				t.Errorf("watch --json: %v hits/s at time_ms %d, want 11 at %d", s.PerSecond.Hits, s.TimeMs, want)
			}
			out = h.ok("watch", "--count", "1", "--key", "k", "app")
			if !strings.Contains(out, "int 20 (+10.0/s)") {
				t.Errorf("watch --key k wrote %q, want int 20 (+10.0/s)", out)
			}
		})
	}
}

// TestWatchStopsWhenZoneGone stops watch, exit 3, before the first sample
// after ZONE stops naming the file it opened: its mapping would show the
// removed zone's figures, frozen, or not the zone now at the path.
func TestWatchStopsWhenZoneGone(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
		says   string
	}{
		{"removed", func(h *harness) { h.ok("rm", "app") }, "zone removed: $SHMZONE_DIR/app.zone names no file"},
		{"removed and created anew", func(h *harness) {
			h.ok("rm", "app")
			h.ok("create", "app", "--size", "1M", "--shards", "1")
		}, "zone replaced: $SHMZONE_DIR/app.zone names another file than the zone watched"},
		{"another zone moved there", func(h *harness) {
			h.ok("create", "other", "--size", "256K", "--shards", "1")
			if err := os.Rename(h.path("other"), h.path("app")); err != nil {
				h.t.Fatal(err)
			}
		}, "zone replaced: $SHMZONE_DIR/app.zone names another file than the zone watched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok("create", "app", "--size", "256K", "--shards", "1")
			tick := 0
			h.sleep = func(d time.Duration) {
				h.advance(d)
				if tick++; tick == 2 {
					tt.change(h)
				}
			}
			out, errs, code := h.run("watch", "--json", "--count", "3", "app")
			errs = strings.ReplaceAll(errs, h.dir, "$SHMZONE_DIR")
			if samples := strings.Count(out, "\n"); code != exitNoZone || samples != 1 || errs != "shmctl watch: "+tt.says+"\n" {
				t.Errorf("watch with the zone %s at the second sample: exit %d, %d sample(s), stderr %q; want exit %d after 1 sample, saying %q",
					tt.name, code, samples, errs, exitNoZone, tt.says)
			}
		})
	}
	h := newHarness(t)
	if help := strings.Join(strings.Fields(h.ok("watch", "--help")), " "); !strings.Contains(help, "removed (shmctl rm) or replaced (removed and created anew, or another file moved there), it stops with exit 3") {
		t.Errorf("shmctl watch --help does not document the exit when the zone is removed or replaced")
	}
}
