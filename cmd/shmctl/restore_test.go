package main

import (
	"bytes"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// fill adds to a zone keys of every kind and size: numbers at the edges of
// their range, floats JSON has no number for, bytes that are not UTF-8,
// large values (page runs), lists, flags, and TTLs that are not whole
// seconds.
func fill(t *testing.T, d *dict.Dict) {
	t.Helper()
	set := func(k string, v dict.Value, ttl time.Duration, flags uint32) {
		if _, err := d.Set(k, v, ttl, flags); err != nil {
			t.Fatalf("Set(%q) = %v", k, err)
		}
	}
	set("nan", dict.Float(math.NaN()), 0, 0)
	set("inf", dict.Float(math.Inf(1)), 0, 0)
	set("-inf", dict.Float(math.Inf(-1)), 0, 0)
	set("-0", dict.Float(math.Copysign(0, -1)), 0, 0)
	set("tiny", dict.Float(5e-324), 0, 0)
	set("max", dict.Int(math.MaxInt64), 0, 0)
	set("min", dict.Int(math.MinInt64), 0, 0)
	set("big", dict.Bytes(bytes.Repeat([]byte{0x80, 0}, 5000)), 37*time.Second+123*time.Millisecond, 9)
	set("utf8 ☃\n\t\"<>&\u2028", dict.String("snow ☃ \u2028"), 0, 0)
	set("\x00bin\xff", dict.Bytes([]byte{0xc3, 0x28}), 0, math.MaxUint32)
	for i := 0; i < 300; i++ {
		set("k"+strconv.Itoa(i), dict.Int(int64(i*i)), time.Duration(i)*time.Second, uint32(i))
	}
	for i := 0; i < 40; i++ {
		if _, err := d.RPush("list", dict.Bytes([]byte{byte(i), 0xfe})); err != nil {
			t.Fatal(err)
		}
		d.RPush("nums", dict.Float(float64(i)/3))
	}
	d.Expire("list", 90*time.Second)
}

// sortedLines sorts a dump's lines: zones of other shard counts list
// their keys in other orders.
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestDumpRestoreResize pipes dump of a 1-shard zone into restore of a new
// zone of another size and 4 shards, as "shmctl dump app | shmctl restore
// big" does, and compares the dumps of both: every key, kind, value, flags
// and TTL, to the millisecond on the same clock.
func TestDumpRestoreResize(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	d := h.dict("app")
	fill(t, d)
	d.Close()
	want := sortedLines(h.ok("dump", "app"))

	pr, pw := io.Pipe()
	var dumpErr, out, errs bytes.Buffer
	dumpEnv, restoreEnv := h.env(pw, &dumpErr), h.env(&out, &errs)
	restoreEnv.stdin = pr
	done := make(chan int)
	go func() {
		code := run([]string{"dump", "app"}, dumpEnv)
		pw.Close()
		done <- code
	}()
	code := run([]string{"restore", "big", "--size", "2M", "--shards", "4"}, restoreEnv)
	if dc := <-done; dc != 0 || code != 0 {
		t.Fatalf("dump | restore: exits %d, %d; stderr %q, %q", dc, code, dumpErr.String(), errs.String())
	}
	if !strings.HasPrefix(out.String(), "restored 320 keys into ") {
		t.Errorf("restore said %q", out.String())
	}
	if got := sortedLines(h.ok("dump", "big")); got != want {
		t.Errorf("the restored zone differs:\n%s\nwant\n%s", got, want)
	}
	if hd := zoneHeader(t, h.path("big")); hd.Shards != 4 || hd.Size <= zoneHeader(t, h.path("app")).Size {
		t.Errorf("restored zone: %d shards of %d bytes, want 4 and larger than the dumped one", hd.Shards, hd.Size)
	}

	// Restoring again replaces each key, lists included, and a TTL is
	// the time left when dumped.
	h.advance(10 * time.Second)
	h.stdin = strings.NewReader(h.ok("dump", "app"))
	h.ok("restore", "big")
	h.stdin = nil
	if got := sortedLines(h.ok("dump", "big")); got != sortedLines(h.ok("dump", "app")) {
		t.Errorf("a second restore differs from the dump:\n%s", got)
	}
}

func TestRestoreErrors(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.ok("create", "small", "--size", "72K", "--shards", "1")
	d := h.dict("app")
	fill(t, d)
	for i := 0; i < 20; i++ { // 80 KB: more than small holds
		if _, err := d.Set("huge"+strconv.Itoa(i), dict.Bytes(make([]byte, 4000)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	dump := h.ok("dump", "app")
	tests := []struct {
		name  string
		input string
		args  []string
		code  int
		err   string
	}{
		{"zone full", dump, []string{"restore", "small"}, exitFail, "zone full after"},
		{"no zone", dump, []string{"restore", "absent"}, exitNoZone, "no such zone"},
		{"not json", "{\"key\":\"a\",\n", []string{"restore", "app"}, exitFail, "record 1"},
		{"bad kind", `{"key":"a","kind":"long","value":1}`, []string{"restore", "app"}, exitFail, `bad kind "long"`},
		{"bad int", `{"key":"a","kind":"int","value":1.5}`, []string{"restore", "app"}, exitFail, "bad int value 1.5"},
		{"no key", `{"kind":"int","value":1}`, []string{"restore", "app"}, exitFail, "no key"},
		{"second record", "{\"key\":\"a\",\"kind\":\"int\",\"value\":1}\n{\"key\":\"b\"}", []string{"restore", "app"}, exitFail, "record 2"},
		{"shards without size", "", []string{"restore", "x", "--shards", "2"}, exitUsage, "--shards needs --size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.stdin = strings.NewReader(tt.input)
			_, errs, code := h.run(tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.err) {
				t.Errorf("shmctl %q: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.err)
			}
		})
	}
	h.stdin = nil
}

// TestRestoreFile reads a dump from a file operand into a zone it creates.
func TestRestoreFile(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	file := h.dir + "/app.jsonl"
	dump := h.ok("dump", "app")
	if err := os.WriteFile(file, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	h.ok("restore", "copy", file, "--size", "512K")
	if got := h.ok("dump", "copy"); sortedLines(got) != sortedLines(dump) {
		t.Errorf("restore from a file:\n%s\nwant\n%s", got, dump)
	}
}
