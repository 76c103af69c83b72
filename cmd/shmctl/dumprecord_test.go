package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// TestDumpRestoreLiveNumbers sets live numbers with the limiters' setters,
// pipes dump into restore of a new zone, and decides with a limiter built
// over the restored zone: it uses the live numbers, not its own.
func TestDumpRestoreLiveNumbers(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	d := h.dict("lim")
	login, err := limiter.NewCount(d, "login", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	api, err := limiter.NewReq(d, "api", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := login.SetLimit(5); err != nil {
		t.Fatal(err)
	}
	if err := api.SetRate(20); err != nil {
		t.Fatal(err)
	}
	d.Close()

	dump := h.ok("dump", "lim")
	if n := strings.Count(dump, `{"record":"`); n != 2 {
		t.Fatalf("dump has %d record lines, want 2:\n%s", n, dump)
	}
	h.stdin = strings.NewReader(dump)
	out := h.ok("restore", "copy", "--size", "256K")
	h.stdin = nil
	if !strings.Contains(out, "and 2 registry records") {
		t.Errorf("restore said %q", out)
	}
	if got := h.ok("dump", "copy"); sortedLines(got) != sortedLines(dump) {
		t.Errorf("the restored zone dumps\n%s\nwant\n%s", got, dump)
	}

	c := h.dict("copy")
	defer c.Close()
	again, err := limiter.NewCount(c, "login", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 6; i++ {
		dec, err := again.Incoming(context.Background(), "alice", true)
		if err != nil {
			t.Fatal(err)
		}
		if want := i <= 5; dec.Allowed != want {
			t.Errorf("request %d over the restored zone: Allowed = %v, want %v", i, dec.Allowed, want)
		}
	}
	ss, err := limiter.Settings(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Name == "api" && (s.LiveFields != limiter.FieldRate || s.InForce.Rate != 20) {
			t.Errorf("api over the restored zone: %+v, want a live rate of 20", s)
		}
	}
}

// TestRestoreOldDump restores a dump without record lines, as dumps were
// before the registry was dumped: the keys are stored and the registry
// keeps its records.
func TestRestoreOldDump(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	d := h.dict("lim")
	login, err := limiter.NewCount(d, "login", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := login.SetLimit(5); err != nil {
		t.Fatal(err)
	}
	d.Close()
	old := "{\"key\":\"hits\",\"kind\":\"int\",\"value\":42,\"flags\":0,\"ttl_ms\":0}\n" +
		"{\"key\":\"greeting\",\"kind\":\"bytes\",\"value\":\"hello\",\"flags\":3,\"ttl_ms\":0}\n"
	h.stdin = strings.NewReader(old)
	out := h.ok("restore", "lim")
	h.stdin = nil
	if !strings.HasPrefix(out, "restored 2 keys into ") {
		t.Errorf("restore of an old dump said %q", out)
	}
	if got := getKey(t, h, "lim", "hits"); !strings.HasPrefix(got, "int 42 ") {
		t.Errorf("get hits = %q, want 42", got)
	}
	if n := strings.Count(h.ok("dump", "lim"), `{"record":"`); n != 1 {
		t.Errorf("the zone holds %d records after an old dump's restore, want 1", n)
	}
}

// TestRestoreBadRecords: a record line that is not a record stops restore
// with exit code 8 and names the line.
func TestRestoreBadRecords(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	w := `"0000000000000001"`
	words := "[" + strings.Repeat(w+",", 4) + w + "]"
	key := "{\"key\":\"a\",\"kind\":\"int\",\"value\":1}\n"
	tests := []struct {
		name, input, err string
	}{
		{"short key", `{"record":"1f","words":` + words + `}`, `line 1: registry record: key: "1f" is not 16 hex digits`},
		{"not hex", `{"record":"zzzzzzzzzzzzzzzz","words":` + words + `}`, "is not 16 hex digits"},
		{"key 0", `{"record":"0000000000000000","words":` + words + `}`, "registry record: key 0"},
		{"few words", `{"record":"00000000000000ab","words":["0000000000000001"]}`, "1 words, want 5"},
		{"no words", `{"record":"00000000000000ab"}`, "0 words, want 5"},
		{"bad word", `{"record":"00000000000000ab","words":["0000000000000001","x","0000000000000001","0000000000000001","0000000000000001"]}`, "word 1: "},
		{"word not a string", `{"record":"00000000000000ab","words":[1,2,3,4,5]}`, "line 1: "},
		{"key not a string", `{"record":171,"words":` + words + `}`, "line 1: "},
		{"key and record", `{"key":"a","kind":"int","value":1,"record":"00000000000000ab","words":` + words + `}`, "a key and a record on one line"},
		{"after a key", key + `{"record":"1","words":` + words + `}`, "line 2: registry record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restoreInto(t, h, "lim", tt.input, exitFail, tt.err)
		})
	}
	d := h.dict("lim")
	defer d.Close()
	if rs, err := d.Records(); err != nil || len(rs) != 0 {
		t.Errorf("Records() after refused records = %d records, %v; want none", len(rs), err)
	}
}
