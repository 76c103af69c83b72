package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shmzone/shmzone/dict"
)

func TestInfo(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.ok("get", "app", "hits") // read-only: counts nothing
	d := h.dict("app")
	d.Get("hits")
	d.Get("absent")
	d.Close()
	golden(t, "info", h.transcript([]string{"info", "app"}, []string{"info", "--shards", "app"}))
	golden(t, "info_json", h.transcript([]string{"info", "--json", "app"}, []string{"info", "--json", "--shards", "app"}))
}

// flood makes a one-shard zone lose a key to eviction and protect others: it
// reads ten keys again, floods the zone with keys used once until the key
// written first is evicted live, and writes that key again, which the zone
// counts as lost and protects, found by its trace. The keys are of one
// length, so that each eviction takes one entry of their slab class. It
// returns the zone's Stats after.
func flood(t *testing.T, d *dict.Dict) dict.Stats {
	t.Helper()
	set := func(k string) dict.Outcome {
		t.Helper()
		out, err := d.UpdateOutcome(k, func(dict.Value, bool) (dict.Value, time.Duration, bool) { return dict.Int(1), 0, true })
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	set("gone00000")
	for i := range 10 {
		set(fmt.Sprintf("used%05d", i))
		d.Get(fmt.Sprintf("used%05d", i))
	}
	for i := 0; ; i++ {
		if i > 100_000 {
			t.Fatal("gone was never evicted")
		}
		set(fmt.Sprintf("f%08d", i))
		if _, err := d.TTL("gone00000"); err != nil { // TTL is no use of the key
			break
		}
	}
	if out := set("gone00000"); !out.Lost {
		t.Fatal("gone, evicted live and written again, is not Lost")
	}
	st := d.Stats()
	// A flood key whose fingerprint meets a trace, about one new key in
	// four million, counts as lost and protected as well.
	if extra := st.Protected - 11; extra < 0 || extra > 2 || int64(st.Lost) != 1+extra {
		t.Fatalf("Stats() = %+v, want 1 lost, and 11 protected: the 10 keys read again and the one lost", st)
	}
	return st
}

// TestInfoLostProtected shows info and watch reporting a zone's lost keys and
// protected entries, as dict.Stats counts them, in text and JSON, per zone
// and per shard.
func TestInfoLostProtected(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "z", "--size", "256K", "--shards", "1")
	d := h.dict("z")
	st := flood(t, d)
	d.Close()
	var r info
	if err := json.Unmarshal([]byte(h.ok("info", "--json", "--shards", "z")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Lost != st.Lost || r.Protected != st.Protected || r.Entries != st.Entries {
		t.Errorf("info --json: lost %d, protected %d of %d entries; want %d, %d of %d", r.Lost, r.Protected, r.Entries, st.Lost, st.Protected, st.Entries)
	}
	if len(r.PerShard) != 1 || r.PerShard[0].Lost != st.Lost || r.PerShard[0].Protected != st.Protected {
		t.Errorf("info --json per shard = %+v, want lost %d, protected %d", r.PerShard, st.Lost, st.Protected)
	}
	text := h.ok("info", "z")
	for _, want := range []string{fmt.Sprintf("\nlost         %d\n", st.Lost), fmt.Sprintf("\nprotected    %d ", st.Protected)} {
		if !strings.Contains(text, want) {
			t.Errorf("info lacks %q:\n%s", want, text)
		}
	}
	h.sleep = func(d time.Duration) { h.advance(d) }
	var w watchSample
	if err := json.Unmarshal([]byte(h.ok("watch", "--json", "--count", "1", "z")), &w); err != nil {
		t.Fatal(err)
	}
	if w.Lost != st.Lost || w.Protected != st.Protected || w.PerSecond.Lost != 0 {
		t.Errorf("watch --json: lost %d (%v/s), protected %d; want %d (0/s), %d", w.Lost, w.PerSecond.Lost, w.Protected, st.Lost, st.Protected)
	}
}

// TestStatsOfEveryCounter: every counter of dict.Stats reaches info's and
// watch's counters, under its own name, and the rates of watch's JSON
// follow them in order: the fixtures' counts are mostly 0, which would not
// tell one counter from another, or a counter from none.
func TestStatsOfEveryCounter(t *testing.T) {
	st := dict.Stats{Hits: 1, Misses: 2, Writes: 3, Evictions: 4, Lost: 5, Expirations: 6,
		LockWaits: 7, Recoveries: 8, Moves: 9}
	want := []string{"hits", "misses", "writes", "evictions", "lost", "expirations", "lock waits", "recoveries", "moves"}
	cs := statsOf(st).counters()
	if len(cs) != len(want) {
		t.Fatalf("%d counters, want %d: %v", len(cs), len(want), cs)
	}
	for i, c := range cs {
		if c.name != want[i] || c.n != uint64(i+1) {
			t.Errorf("counter %d = %s %d, want %s %d", i, c.name, c.n, want[i], i+1)
		}
	}
	rates := perSecond(jsonStats{}, statsOf(st), time.Second)
	b, err := json.Marshal(jsonRates{rates[0], rates[1], rates[2], rates[3], rates[4], rates[5], rates[6], rates[7], rates[8]})
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"hits":1,"misses":2,"writes":3,"evictions":4,"lost":5,"expirations":6,"lock_waits":7,"recoveries":8,"moves":9}`
	if string(b) != wantJSON {
		t.Errorf("rates = %s, want %s", b, wantJSON)
	}
}

// TestInfoQuotesZonePath prints a zone path that is not printable text
// quoted, as keys are, so that no control code reaches the terminal; in
// JSON a path that is not UTF-8 is in zone_b64, so that it names the file.
func TestInfoQuotesZonePath(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"e\x1b[31mred", "\xff"} {
		h.ok("create", name, "--size", "256K", "--shards", "1")
		out := h.ok("info", name)
		if want := fmt.Sprintf("zone         %q\n", h.path(name)); !strings.HasPrefix(out, want) {
			t.Errorf("info %q begins %q, want %q", name, strings.SplitAfter(out, "\n")[0], want)
		}
		var r struct {
			Zone    string `json:"zone"`
			ZoneB64 string `json:"zone_b64"`
		}
		if err := json.Unmarshal([]byte(h.ok("info", "--json", name)), &r); err != nil {
			t.Fatal(err)
		}
		path := r.Zone
		if r.ZoneB64 != "" {
			b, _ := base64.StdEncoding.DecodeString(r.ZoneB64)
			path = string(b)
		}
		if path != h.path(name) || (r.ZoneB64 != "") != !utf8.ValidString(path) {
			t.Errorf("info --json %q: zone %q, zone_b64 %q; want the path %q, in zone_b64 only when it is not UTF-8", name, r.Zone, r.ZoneB64, h.path(name))
		}
	}
}
