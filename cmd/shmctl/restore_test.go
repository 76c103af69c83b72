package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
		// TTLs of a minute and more (none for k0): the process test runs on
		// the system clock, and none may expire while it runs.
		ttl := time.Duration(i) * time.Second
		if i > 0 {
			ttl += time.Minute
		}
		set("k"+strconv.Itoa(i), dict.Int(int64(i*i)), ttl, uint32(i))
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
		{"not json", "{\"key\":\"a\",\n", []string{"restore", "app"}, exitFail, "line 1: "},
		{"bad kind", `{"key":"a","kind":"long","value":1}`, []string{"restore", "app"}, exitFail, `bad kind "long"`},
		{"bad int", `{"key":"a","kind":"int","value":1.5}`, []string{"restore", "app"}, exitFail, "bad int value 1.5"},
		{"no key", `{"kind":"int","value":1}`, []string{"restore", "app"}, exitFail, "no key"},
		{"empty key", `{"key":"","kind":"int","value":1}`, []string{"restore", "app"}, exitFail, "line 1: no key"},
		{"second line", "{\"key\":\"a\",\"kind\":\"int\",\"value\":1}\n\n{\"key\":\"b\"}", []string{"restore", "app"}, exitFail, "line 3 (key b): "},
		{"two records on a line", "{\"key\":\"a\",\"kind\":\"int\",\"value\":1} {\"key\":\"b\",\"kind\":\"int\",\"value\":1}", []string{"restore", "app"}, exitFail, "line 1: "},
		{"missing dump file", "", []string{"restore", "app", h.dir + "/missing.jsonl"}, exitFail, "cannot read the dump: open " + h.dir + "/missing.jsonl: no such file"},
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

// restoreInto runs restore of input into zone and fails unless it exits
// with code and its stderr holds msg.
func restoreInto(t *testing.T, h *harness, zone, input string, code int, msg string) {
	t.Helper()
	h.stdin = strings.NewReader(input)
	defer func() { h.stdin = nil }()
	_, errs, got := h.run("restore", zone)
	if got != code || !strings.Contains(errs, msg) {
		t.Errorf("shmctl restore %s: exit %d, stderr %q; want %d and %q", zone, got, errs, code, msg)
	}
}

// getKey runs shmctl get with args and returns its output; it fails the
// calling test, a subtest too, unless get exits 0.
func getKey(t *testing.T, h *harness, args ...string) string {
	t.Helper()
	out, errs, code := h.run(append([]string{"get"}, args...)...)
	if code != 0 {
		t.Fatalf("shmctl get %q: exit %d, stderr %q", args, code, errs)
	}
	return out
}

// abbrev shortens get's output of long values for messages.
func abbrev(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…(%d bytes)", s[:60], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// checkZone fails unless the zone passes Check.
func checkZone(t *testing.T, h *harness, zone string) {
	t.Helper()
	d := h.dict(zone)
	defer d.Close()
	if err := d.Check(); err != nil {
		t.Fatalf("Check(%s) = %v", zone, err)
	}
}

// A list too large for the zone leaves the key it would replace as it was,
// a list or a value, and the error names the line. The lines before it are
// restored; the keys after it are not.
func TestRestoreListThatDoesNotFitKeepsOldValue(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "small", "--size", "72K", "--shards", "1")
	d := h.dict("small")
	oldList := []dict.Value{dict.String("a"), dict.Int(2), dict.Bytes(bytes.Repeat([]byte{3}, 1500))}
	for _, v := range oldList {
		if _, err := d.RPush("q", v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Set("v", dict.String("old value"), time.Hour, 6); err != nil {
		t.Fatal(err)
	}
	d.Close()
	wantQ := h.ok("get", "small", "q")
	wantV := h.ok("get", "small", "v")

	elems := make([]string, 40) // 160 KB: more than the zone holds
	for i := range elems {
		elems[i] = fmt.Sprintf(`{"kind":"bytes","value":%q}`, strings.Repeat(strconv.Itoa(i%10), 4000))
	}
	big := "[" + strings.Join(elems, ",") + "]"
	for _, key := range []string{"q", "v"} {
		t.Run(key, func(t *testing.T) {
			input := `{"key":"first","kind":"int","value":1,"flags":0,"ttl_ms":0}` + "\n" +
				`{"key":"` + key + `","kind":"list","value":` + big + `,"flags":0,"ttl_ms":0}` + "\n" +
				`{"key":"after","kind":"int","value":1,"flags":0,"ttl_ms":0}` + "\n"
			restoreInto(t, h, "small", input, exitFail, "line 2 (key "+key+"): zone full after 1 keys")
			if got := getKey(t, h, "small", "q"); got != wantQ {
				t.Errorf("get q after the failed restore = %s, want %s as before", abbrev(got), abbrev(wantQ))
			}
			if got := getKey(t, h, "small", "v"); got != wantV {
				t.Errorf("get v after the failed restore = %s, want %s as before", abbrev(got), abbrev(wantV))
			}
			if got := getKey(t, h, "small", "first"); got != "int 1 flags=0 ttl=never\n" {
				t.Errorf("get first = %q, want the key of line 1 restored", got)
			}
			if _, _, code := h.run("get", "small", "after"); code != exitNo {
				t.Errorf("get after: exit %d, want %d: restore stops at the line that fails", code, exitNo)
			}
			checkZone(t, h, "small")
		})
	}
	// A list that fits replaces the old one whole, its TTL with it.
	restoreInto(t, h, "small", `{"key":"q","kind":"list","value":`+"["+strings.Join(elems[:3], ",")+"]"+`,"flags":0,"ttl_ms":5000}`, exitOK, "")
	d = h.dict("small")
	defer d.Close()
	if vs, err := d.LRange("q"); err != nil || len(vs) != 3 || vs[2].String() != strings.Repeat("2", 4000) {
		t.Fatalf("LRange(q) after restoring 3 elements = %d elements, %v", len(vs), err)
	}
	if ttl, err := d.TTL("q"); ttl != 5*time.Second || err != nil {
		t.Fatalf("TTL(q) = %v, %v; want 5s", ttl, err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// A number out of its field's range is an error naming the line, never a
// value that wrapped: the key keeps what it had.
func TestRestoreRejectsOutOfRangeNumbers(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "z", "--size", "256K", "--shards", "1")
	h.ok("set", "z", "k", "old", "--flags", "2")
	want := h.ok("get", "z", "k", "--json")
	line := func(kind, value string, flags, ttl string) string {
		return `{"key":"ok","kind":"int","value":1,"flags":0,"ttl_ms":0}` + "\n" +
			`{"key":"k","kind":"` + kind + `","value":` + value + `,"flags":` + flags + `,"ttl_ms":` + ttl + "}\n"
	}
	tests := []struct {
		name, input, msg string
	}{
		{"ttl_ms that wraps a Duration", line("int", "1", "0", "18446744073710"), "line 2 (key k): ttl_ms 18446744073710 out of range"},
		{"ttl_ms one past the longest", line("int", "1", "0", strconv.FormatInt(maxTTLMs+1, 10)), "line 2 (key k): ttl_ms 9223372036854 out of range"},
		{"ttl_ms of MaxInt64", line("int", "1", "0", "9223372036854775807"), "line 2 (key k): ttl_ms 9223372036854775807 out of range"},
		{"negative ttl_ms", line("int", "1", "0", "-1"), "line 2 (key k): ttl_ms -1 out of range"},
		{"ttl_ms past int64", line("int", "1", "0", "18446744073709551616"), "line 2: json: cannot unmarshal number 18446744073709551616"},
		{"fractional ttl_ms", line("int", "1", "0", "1.5"), "line 2: json: cannot unmarshal number 1.5"},
		{"flags past uint32", line("int", "1", "4294967296", "0"), "line 2: json: cannot unmarshal number 4294967296"},
		{"negative flags", line("int", "1", "-1", "0"), "line 2: json: cannot unmarshal number -1"},
		{"int past int64", line("int", "9223372036854775808", "0", "0"), "line 2 (key k): bad int value 9223372036854775808"},
		{"float past float64", line("float", "1e309", "0", "0"), "line 2 (key k): bad float value 1e309"},
		{"list element past int64", line("list", `[{"kind":"int","value":-9223372036854775809}]`, "0", "0"), "line 2 (key k): list element 0: bad int value"},
		{"list with flags", line("list", `[{"kind":"int","value":1}]`, "3", "0"), "line 2 (key k): flags 3 on a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restoreInto(t, h, "z", tt.input, exitFail, tt.msg)
			if got := getKey(t, h, "z", "k", "--json"); got != want {
				t.Errorf("get k after the failed restore = %q, want %q as before", got, want)
			}
			checkZone(t, h, "z")
		})
	}

	// The longest TTL is kept whole, to the millisecond.
	restoreInto(t, h, "z", line("int", "7", "0", strconv.FormatInt(maxTTLMs, 10)), exitOK, "")
	d := h.dict("z")
	defer d.Close()
	if ttl, err := d.TTL("k"); err != nil || ttl != time.Duration(maxTTLMs)*time.Millisecond {
		t.Fatalf("TTL(k) after restoring ttl_ms %d = %v, %v; want %v", maxTTLMs, ttl, err, time.Duration(maxTTLMs)*time.Millisecond)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// A line whose value is null, missing or an empty list is refused, naming
// the line: SetList of no elements would delete the key, and a bytes null
// would store the text "null". The key keeps what it had.
func TestRestoreRefusesMissingValues(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "z", "--size", "256K", "--shards", "1")
	h.ok("set", "z", "k", "old", "--flags", "2")
	want := h.ok("get", "z", "k", "--json")
	line := func(fields string) string {
		return `{"key":"ok","kind":"int","value":1,"flags":0,"ttl_ms":0}` + "\n" +
			`{"key":"k",` + fields + `,"flags":0,"ttl_ms":0}` + "\n"
	}
	tests := []struct {
		name, input, msg string
	}{
		{"list null", line(`"kind":"list","value":null`), "line 2 (key k): list value null: want at least one element"},
		{"empty list", line(`"kind":"list","value":[]`), "line 2 (key k): list value []: want at least one element"},
		{"list without value", line(`"kind":"list"`), "line 2 (key k): list value missing: want at least one element"},
		{"bytes null", line(`"kind":"bytes","value":null`), "line 2 (key k): bytes value null or missing"},
		{"bytes without value", line(`"kind":"bytes"`), "line 2 (key k): bytes value null or missing"},
		{"int without value", line(`"kind":"int"`), "line 2 (key k): int value null or missing"},
		{"list element null", line(`"kind":"list","value":[{"kind":"bytes","value":null}]`), "line 2 (key k): list element 0: bytes value null or missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.ok("set", "z", "k", "old", "--flags", "2") // as it was, whatever a failed case did
			restoreInto(t, h, "z", tt.input, exitFail, tt.msg)
			if got := getKey(t, h, "z", "k", "--json"); got != want {
				t.Errorf("get k after the failed restore = %q, want %q as before", got, want)
			}
			checkZone(t, h, "z")
		})
	}
}

// A key that dict refuses (longer than dict.MaxKeyLen) is a bad line: exit
// 8 naming it, without restore's usage, as for a bad key on a command line,
// and the message shows the key's start and its length, not the whole key.
func TestRestoreRefusesLongKeys(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "z", "--size", "256K", "--shards", "1")
	long := strings.Repeat("a", dict.MaxKeyLen+1)
	snowmen := strings.Repeat("☃", dict.MaxKeyLen/3+1) // 3 bytes each: cut between two
	tests := []struct {
		name, input, msg string
	}{
		{"int", `{"key":"` + long + `","kind":"int","value":1}`, "line 1 (key " + long[:64] + "… (65536 bytes)): dict: key too long: at most 65535 bytes"},
		{"list", `{"key":"` + long + `","kind":"list","value":[{"kind":"int","value":1}]}`, "line 1 (key " + long[:64] + "… (65536 bytes)): dict: key too long"},
		{"utf-8", `{"key":"` + snowmen + `","kind":"int","value":1}`, "line 1 (key " + snowmen[:63] + "… (65538 bytes)): dict: key too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.stdin = strings.NewReader(tt.input)
			defer func() { h.stdin = nil }()
			_, errs, code := h.run("restore", "z")
			if code != exitFail || !strings.Contains(errs, tt.msg) || strings.Contains(errs, "Usage:") || len(errs) > 300 {
				t.Errorf("restore (a long key, %s) = exit %d, stderr %s; want 8 and %q, no usage", tt.name, code, abbrev(errs), tt.msg)
			}
		})
	}
}

// restore --size into a folder that does not exist says so, exit 8, as
// create does, not "no such zone".
func TestRestoreIntoMissingFolder(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.dir, "nodir")
	zone := filepath.Join(dir, "app.zone")
	h.stdin = strings.NewReader(`{"key":"a","kind":"int","value":1}`)
	defer func() { h.stdin = nil }()
	_, errs, code := h.run("restore", zone, "--size", "256K")
	want := "cannot create zone " + zone + ": folder " + dir + " does not exist"
	if code != exitFail || !strings.Contains(errs, want) || strings.Contains(errs, "create one with") {
		t.Errorf("restore %s --size 256K = exit %d, stderr %q; want %d and %q", zone, code, errs, exitFail, want)
	}
}

// restore --size into an existing zone of another size fails, exit 8,
// with dict's message: both sizes and the commands that resize the zone.
// The zone's keys are as they were.
func TestRestoreSizeMismatch(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	zone := filepath.Join(h.dir, "app.zone")
	before := h.ok("dump", "app")
	h.stdin = strings.NewReader(`{"key":"a","kind":"int","value":1}`)
	defer func() { h.stdin = nil }()
	_, errs, code := h.run("restore", "app", "--size", "512K")
	for _, want := range []string{
		"dict: zone size differs",
		zone + " is 262144 bytes, Options.Size asks 524288",
		"shmctl dump " + zone + " | shmctl restore " + zone + ".new --size 524288",
	} {
		if code != exitFail || !strings.Contains(errs, want) {
			t.Errorf("restore app --size 512K into a 256K zone = exit %d, stderr %q; want %d and %q", code, errs, exitFail, want)
		}
	}
	if after := h.ok("dump", "app"); after != before {
		t.Errorf("dump after the failed restore:\n%s\nwant\n%s", after, before)
	}
}
