package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with this run's output")

// TestMain runs the test binary as shmctl itself when SHMCTL_AS_MAIN is
// set: the process tests (process_test.go) run it as the real command.
func TestMain(m *testing.M) {
	if os.Getenv("SHMCTL_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// epoch is the fixed time the harness's wall clock starts at, in Unix ms.
const epoch = testutil.EpochMilli

// harness runs shmctl in-process on zones in a temporary SHMZONE_DIR, with
// clocks that move only when told, and records every zone a verb opens.
type harness struct {
	t     *testing.T
	dir   string
	wall  testutil.Clock // the wall clock
	mono  atomic.Int64   // the monotonic clock, ns since the harness began
	mu    sync.Mutex
	opens []bool // for each zone a verb opened, whether it is mapped read-only
	sleep func(time.Duration)
	term  bool
	stdin io.Reader
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	t.Setenv("SHMZONE_DIR", h.dir)
	return h
}

func (h *harness) now() int64             { return h.wall.UnixMilli() }
func (h *harness) monoNow() time.Duration { return time.Duration(h.mono.Load()) }

// stepWall steps the wall clock alone, as NTP or a person setting the
// clock does; advance moves both clocks, as time passing does.
func (h *harness) stepWall(d time.Duration) { h.wall.Advance(d) }

func (h *harness) advance(d time.Duration) {
	h.wall.Advance(d)
	h.mono.Add(int64(d))
}

// path returns the file of a zone name.
func (h *harness) path(name string) string { return filepath.Join(h.dir, name+".zone") }

func (h *harness) env(stdout, stderr io.Writer) *env {
	in := h.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	return &env{
		stdin: in, stdout: stdout, stderr: stderr, clock: h.now, sleep: h.sleep, mono: h.monoNow, terminal: h.term,
		opened: func(d *dict.Dict) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.opens = append(h.opens, d.ReadOnly())
		},
	}
}

// run runs shmctl with args and returns its output and exit code.
func (h *harness) run(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(args, h.env(&out, &errb))
	return out.String(), errb.String(), code
}

// ok runs shmctl with args, fails the test unless it exits 0, and returns
// its stdout.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("shmctl %s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
	}
	return out
}

// transcript runs each command line and returns what a terminal would show:
// the command, its stdout and stderr, and a non-zero exit code. Paths in
// the zone folder read $SHMZONE_DIR.
func (h *harness) transcript(lines ...[]string) string {
	var b strings.Builder
	for _, args := range lines {
		out, errs, code := h.run(args...)
		fmt.Fprintf(&b, "$ shmctl %s\n%s%s", strings.Join(quoteArgs(args), " "), out, errs)
		if code != 0 {
			fmt.Fprintf(&b, "[exit %d]\n", code)
		}
	}
	return strings.ReplaceAll(b.String(), h.dir, "$SHMZONE_DIR")
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \"'\\\n") || a != strings.ToValidUTF8(a, "") {
			q[i] = fmt.Sprintf("%q", a)
		}
	}
	return q
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// fixture creates the zone "app" that the golden tests read: one shard, so
// that every figure is the same whatever the hash seed, holding a key of
// each kind, flags, TTLs, binary bytes, a key that is not UTF-8, and a key
// that expired.
func (h *harness) fixture() {
	h.t.Helper()
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	h.ok("set", "app", "old", "gone", "--ttl", "1s")
	h.advance(2 * time.Second)
	h.ok("set", "app", "greeting", "hello, <world>", "--flags", "3", "--ttl", "90s")
	h.ok("set", "app", "hits", "42", "--kind", "int")
	h.ok("set", "app", "pi", "3.25", "--kind", "float", "--ttl", "1500ms")
	h.ok("set", "app", "on", "true", "--kind", "bool", "--flags", "1")
	h.ok("set", "app", "bin", "AP8KG1sybQ==", "--base64")
	h.ok("set", "app", "two words", "", "--flags", "4294967295")
	d := h.dict("app")
	defer d.Close()
	for _, v := range []dict.Value{dict.Int(1), dict.String("two"), dict.Bool(false), dict.Bytes([]byte{0xff})} {
		if _, err := d.RPush("queue", v); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := d.Set("\xff\xfe", dict.Float(-0.5), 0, 7); err != nil {
		h.t.Fatal(err)
	}
	h.opens = nil
}

// dict opens a zone of the harness read-write with its clock.
func (h *harness) dict(name string) *dict.Dict {
	h.t.Helper()
	d, err := dict.Open(h.path(name), dict.Options{Clock: h.now})
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := h.run(c.name, "--help")
			if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: shmctl "+c.name+" ") {
				t.Errorf("shmctl %s --help: exit %d, stderr %q, stdout %.60q", c.name, code, errs, out)
			}
			if out2, _, _ := h.run("help", c.name); out2 != out {
				t.Errorf("shmctl help %s differs from shmctl %[1]s --help", c.name)
			}
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				if len(f.Usage) < 10 {
					t.Errorf("flag --%s of %s has no help text", f.Name, c.name)
				}
				if !strings.Contains(out, "-"+f.Name) {
					t.Errorf("shmctl %s --help does not show --%s", c.name, f.Name)
				}
			})
			if c.summary == "" || len(c.help) < 40 {
				t.Errorf("%s has no summary or help", c.name)
			}
		})
	}
	out, _, code := h.run("help")
	if code != 0 || !strings.Contains(out, "Exit codes:") {
		t.Errorf("shmctl help: exit %d, %q", code, out)
	}
	for _, c := range commands {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("shmctl help does not list %s", c.name)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K")
	tests := []struct {
		name string
		args []string
	}{
		{"no verb", nil},
		{"unknown verb", []string{"frob"}},
		{"unknown flag", []string{"get", "--frob", "app", "k"}},
		{"too few operands", []string{"get", "app"}},
		{"too many operands", []string{"get", "app", "k", "l"}},
		{"bad kind", []string{"set", "app", "k", "1", "--kind", "long"}},
		{"bad int", []string{"set", "app", "k", "x", "--kind", "int"}},
		{"bad ttl", []string{"set", "app", "k", "v", "--ttl", "soon"}},
		{"negative ttl", []string{"expire", "app", "k", "-5s"}},
		{"bad flags", []string{"set", "app", "k", "v", "--flags", "4294967296"}},
		{"bad size", []string{"create", "b", "--size", "lots"}},
		{"bad shards", []string{"create", "b", "--size", "1M", "--shards", "3"}},
		{"empty key", []string{"get", "app", ""}},
		{"bad count", []string{"watch", "app", "--count", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := h.run(tt.args...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "Usage: shmctl") {
				t.Errorf("shmctl %q: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", tt.args, code, out, errs)
			}
		})
	}
	if _, err := os.Stat(h.path("b")); err == nil {
		t.Errorf("a create with bad options left a file")
	}
}

// TestExitCodes gives each failure the documented code, in-process; the
// process tests check them again from a real process.
func TestExitCodes(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	os.WriteFile(h.path("junk"), []byte("not a zone"), 0o600)
	os.Mkdir(h.path("dir"), 0o700)
	writeOtherLayout(t, h.path("other"))
	h.ok("create", "bad", "--size", "256K")
	corruptHeader(t, h.path("bad"))
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"get", "app", "hits"}, exitOK},
		{[]string{"get", "app", "absent"}, exitNo},
		{[]string{"get", "app", "old"}, exitNo}, // expired
		{[]string{"ttl", "app", "absent"}, exitNo},
		{[]string{"add", "app", "hits", "1"}, exitNo},
		{[]string{"create", "app", "--size", "1M"}, exitNo},
		{[]string{"get", "nozone", "k"}, exitNoZone},
		{[]string{"get", "junk", "k"}, exitNotZone},
		{[]string{"get", "dir", "k"}, exitNotZone},
		{[]string{"get", "other", "k"}, exitVersion},
		{[]string{"get", "bad", "k"}, exitCorrupt},
		{[]string{"incr", "app", "greeting"}, exitFail},
		{[]string{"get", "app", "--raw", "queue"}, exitFail},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if _, errs, code := h.run(tt.args...); code != tt.want {
				t.Errorf("shmctl %q: exit %d, want %d (stderr %q)", tt.args, code, tt.want, errs)
			}
		})
	}
}

// writeOtherLayout creates a zone of another layout than dict's.
func writeOtherLayout(t *testing.T, path string) {
	t.Helper()
	z, err := shm.Open(path, shm.Options{Size: 256 << 10, Layout: 0x4f544852})
	if err != nil {
		t.Fatal(err)
	}
	z.Close()
}

// corruptHeader changes a byte of a zone's header that its checksum covers.
func corruptHeader(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Flip a byte of the seed: writing a fixed value would leave the header
	// sound whenever the random seed already held it there.
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 60); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, 60); err != nil {
		t.Fatal(err)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args     []string
		operands string
		json     bool
		n        int
	}{
		{[]string{"a", "b"}, "a b", false, 0},
		{[]string{"--json", "a", "b"}, "a b", true, 0},
		{[]string{"a", "--json", "b"}, "a b", true, 0},
		{[]string{"a", "b", "-json"}, "a b", true, 0},
		{[]string{"a", "--n", "3", "b"}, "a b", false, 3},
		{[]string{"a", "--n=3", "-1"}, "a -1", false, 3},
		{[]string{"a", "-2.5", "--json"}, "a -2.5", true, 0},
		{[]string{"a", "--", "--json", "-x"}, "a --json -x", false, 0},
		{[]string{"--json", "--", "-"}, "-", true, 0},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		asJSON := fs.Bool("json", false, "")
		n := fs.Int("n", 0, "")
		ops, err := parseArgs(fs, tt.args)
		if err != nil || strings.Join(ops, " ") != tt.operands || *asJSON != tt.json || *n != tt.n {
			t.Errorf("parseArgs(%q) = %q, json %v, n %d, %v; want %q, %v, %d",
				tt.args, ops, *asJSON, *n, err, tt.operands, tt.json, tt.n)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseArgs(fs, []string{"a", "--nope"}); !errors.As(err, new(usageError)) {
		t.Errorf("parseArgs with an unknown flag = %v, want a usageError", err)
	}
	if _, err := parseArgs(fs, []string{"a", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseArgs(-h) = %v, want flag.ErrHelp", err)
	}
}
