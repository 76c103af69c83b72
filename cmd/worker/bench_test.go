package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

func fixedReport() report {
	rep := report{Backend: "zone", Op: "incr", Keys: 1000, Keyset: "shared", Duration: "2s", Rows: []row{
		{Procs: 1, Ops: 60_000_000, Seconds: 2, OpsPerSec: 30_000_000, NsPerOp: 33.3, P50: 80, P99: 108, P999: 232},
		{Procs: 2, Ops: 110_000_000, Seconds: 2, OpsPerSec: 55_000_000, NsPerOp: 36.4, P50: 84, P99: 1250, P999: 64_100},
		{Procs: 4, Ops: 100_000_000, Seconds: 2, OpsPerSec: 50_000_000, NsPerOp: 80, P50: 96, P99: 2_000_000, P999: 3_456_789},
	}}
	scale(rep.Rows)
	return rep
}

func TestWriteTableGolden(t *testing.T) {
	var b bytes.Buffer
	if err := writeTable(&b, fixedReport()); err != nil {
		t.Fatal(err)
	}
	want := `backend=zone op=incr keys=1000 keyset=shared duration=2s
  procs  ops/s  ns/op   p50     p99    p999  scaling
      1    30M   33.3  80ns   108ns   232ns    1.00x
      2    55M   36.4  84ns  1.25µs  64.1µs    1.83x
      4    50M   80.0  96ns     2ms  3.46ms    1.67x
`
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// humanCount rounds to three significant digits before it picks the
// suffix, so a count just under a suffix's boundary reads as the next one.
func TestHumanCountRoundsBeforeItsSuffix(t *testing.T) {
	for _, tc := range []struct {
		n    float64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{999.6, "1k"},
		{1234, "1.23k"},
		{999_499, "999k"},
		{999_999, "1M"},
		{30e6, "30M"},
		{999.6e6, "1G"},
		{1.5e9, "1.5G"},
	} {
		if got := humanCount(tc.n); got != tc.want {
			t.Errorf("humanCount(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// humanNanos rounds a latency once, to three significant digits: rounding
// digit by digit would carry a 5 up (1,234,567 ns to 1.24ms).
func TestHumanNanosRoundsOnce(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "0s"},
		{80, "80ns"},
		{999, "999ns"},
		{1250, "1.25µs"},
		{14848, "14.8µs"},
		{144_449, "144µs"},
		{999_499, "999µs"},
		{999_999, "1ms"},
		{1_234_449, "1.23ms"},
		{1_234_567, "1.23ms"},
		{3_456_789, "3.46ms"},
	} {
		if got := humanNanos(tc.ns); got != tc.want {
			t.Errorf("humanNanos(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	rep := fixedReport()
	var b bytes.Buffer
	if err := writeJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var got report
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	if len(got.Rows) != 3 || got.Backend != "zone" || got.Op != "incr" || got.Keys != 1000 || got.Keyset != "shared" {
		t.Fatalf("round trip lost fields: %+v", got)
	}
	for i, r := range got.Rows {
		if r != rep.Rows[i] {
			t.Fatalf("row %d: %+v, want %+v", i, r, rep.Rows[i])
		}
	}
	for _, field := range []string{`"keyset"`, `"ops_per_sec"`, `"ns_per_op"`, `"p50_ns"`, `"p99_ns"`, `"p999_ns"`, `"scaling"`} {
		if !strings.Contains(b.String(), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
}

// svgPoints parses svg as XML and returns the data-procs of its data points.
func svgPoints(t *testing.T, svg []byte) []int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var procs []int
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
			if root != "svg" || se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Fatalf("root element %v, want svg in the SVG namespace", se.Name)
			}
		}
		for _, a := range se.Attr {
			if a.Name.Local == "data-procs" {
				n, err := strconv.Atoi(a.Value)
				if err != nil {
					t.Fatalf("data-procs %q", a.Value)
				}
				procs = append(procs, n)
			}
		}
	}
	return procs
}

func TestWriteChart(t *testing.T) {
	var b bytes.Buffer
	writeChart(&b, fixedReport())
	got := svgPoints(t, b.Bytes())
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("data points for procs %v, want [1 2 4]", got)
	}
	// A report with no throughput still draws.
	b.Reset()
	writeChart(&b, report{Backend: "a&b", Rows: []row{{Procs: 1}}})
	if got := svgPoints(t, b.Bytes()); len(got) != 1 {
		t.Fatalf("empty report: %d points", len(got))
	}
}

func TestHistQuantile(t *testing.T) {
	h := hist{}
	for i := int64(1); i <= 10000; i++ {
		h.add(i * 10)
	}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 50_000}, {0.99, 99_000}, {0.999, 99_900}} {
		got := h.quantile(c.q)
		if got > c.want || float64(got) < float64(c.want)*0.93 {
			t.Errorf("quantile(%v) = %d, want within 7%% below %d", c.q, got, c.want)
		}
	}
	for ns := int64(0); ns < 1<<20; ns = ns*5/4 + 1 {
		b := bucketOf(ns)
		if lo := bucketLow(b); lo > ns || bucketOf(lo) != b {
			t.Fatalf("bucket %d of %d has low edge %d", b, ns, lo)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-procs", "1,x"}, `bad -procs "1,x"`},
		{[]string{"-procs", "0"}, `bad -procs "0"`},
		{[]string{"-procs", ""}, `bad -procs ""`},
		{[]string{"-op", "frob"}, `unknown -op "frob"`},
		{[]string{"-backend", "etcd"}, `unknown -backend "etcd"`},
		{[]string{"-backend", "mutex", "-op", "req"}, "-backend mutex does not run -op req"},
		{[]string{"-backend", "tiered"}, "-backend tiered does not run -op incr: it runs count"},
		{[]string{"-keys", "0"}, "bad -keys 0"},
		{[]string{"-keyset", "mine"}, `unknown -keyset "mine": want one of shared, own`},
		{[]string{"-duration", "0s"}, "bad -duration 0s"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		var out, errb bytes.Buffer
		if code := dispatch("", append([]string{"bench"}, c.args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, errb.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote to stdout: %q", c.args, out.String())
		}
	}
}

func TestBenchHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch("", []string{"bench", "-h"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"-procs", "-op", "-keys", "-keyset", "-duration", "-backend", "-zone", "-redis", "-json", "-chart"} {
		if !strings.Contains(errb.String(), f) {
			t.Errorf("help lacks %s", f)
		}
	}
}

// runBenchCmd runs worker bench with args and returns its stdout and stderr.
func runBenchCmd(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := dispatch("", append([]string{"bench"}, args...), &out, &errb); code != 0 {
		t.Fatalf("worker bench %v: exit %d\nstderr: %s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// tableRows returns the fields of the table's data rows.
func tableRows(t *testing.T, table string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "backend=") || !strings.Contains(lines[1], "ops/s") {
		t.Fatalf("not a table:\n%s", table)
	}
	var rows [][]string
	for _, l := range lines[2:] {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestBenchRunZone(t *testing.T) {
	t.Parallel()
	chart := filepath.Join(t.TempDir(), "c.svg")
	out, _ := runBenchCmd(t, "-procs", "1,2", "-duration", "200ms", "-chart", chart)
	rows := tableRows(t, out)
	if len(rows) != 2 || rows[0][0] != "1" || rows[1][0] != "2" {
		t.Fatalf("want rows for procs 1 and 2:\n%s", out)
	}
	for _, r := range rows {
		if r[1] == "0" || strings.HasPrefix(r[1], "-") {
			t.Fatalf("ops/s %q not positive:\n%s", r[1], out)
		}
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if got := svgPoints(t, svg); len(got) != 2 {
		t.Fatalf("chart has %d points, want 2", len(got))
	}
}

// SIGINT or SIGTERM to a running "worker bench" (a real process, this
// test binary run as the worker command) stops its children, removes the
// temp dir of its default zone and exits 1 saying it was interrupted.
func TestBenchSignalStopsChildrenAndRemovesTempZone(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			// A row that outlasts the test: only the signal ends it.
			cmd := exec.Command(os.Args[0], "bench", "-procs", "2", "-duration", "1h")
			cmd.Env = append(os.Environ(), serveTestEnv+"=1", "TMPDIR="+tmp)
			stderr := &serveBuffer{}
			cmd.Stdout, cmd.Stderr = io.Discard, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})
			// A progress line: the row's children are running.
			if !serveWaitFor(serveHang, func() bool { return strings.Contains(stderr.String(), "procs=2: ") }) {
				t.Fatalf("no progress line; stderr:\n%s", stderr)
			}
			kids := procChildren(t, cmd.Process.Pid)
			if len(kids) != 2 {
				t.Fatalf("worker bench has children %v, want 2", kids)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), "worker-bench-") {
				t.Fatalf("TMPDIR holds %v, want the bench's temp dir", ents)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
				done <- err // for the cleanup
			case <-time.After(serveHang):
				t.Fatalf("worker bench still running %v after %v; stderr:\n%s", sig, serveHang, stderr)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "worker bench: interrupted") {
				t.Errorf("worker bench after %v: %v, stderr %q; want exit 1 and \"worker bench: interrupted\"", sig, err, stderr)
			}
			for _, pid := range kids {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("child %d still there after worker bench exited: %v", pid, err)
				}
			}
			if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
				t.Errorf("TMPDIR after %v holds %v (%v), want nothing", sig, ents, err)
			}
		})
	}
}

// procChildren lists the child processes of pid, from every thread's
// /proc children file.
func procChildren(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(files) == 0 {
		t.Fatalf("no /proc children files for %d: %v", pid, err)
	}
	var kids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s: %q", f, b)
			}
			kids = append(kids, n)
		}
	}
	return kids
}

func TestProgressLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := newProgress(&b)
	start := time.Unix(1_700_000_000, 0)
	ticks := make(chan time.Time)
	p.now = func() time.Time { return start }
	p.ticker = func() (<-chan time.Time, func()) { return ticks, func() {} }
	c := &child{}
	c.ops.Store(5_000_000)
	stop := p.row(benchConfig{Backend: "zone", Op: "get", Duration: 2e9}, 1, []*child{c})
	ticks <- start.Add(time.Second) // the line is written before the next receive
	stop()
	p.done()
	if want := "bench zone get procs=1: 1s/2s, 5M ops/s\n"; b.String() != want {
		t.Fatalf("progress %q, want %q", b.String(), want)
	}
}

// benchJSON runs worker bench -json and checks every row ran.
func benchJSON(t *testing.T, args ...string) report {
	t.Helper()
	out, _ := runBenchCmd(t, append(args, "-json")...)
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON %v:\n%s", err, out)
	}
	for _, r := range rep.Rows {
		if r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50 <= 0 || r.Scaling <= 0 {
			t.Fatalf("%v: row without a measurement: %+v", args, r)
		}
	}
	return rep
}

func TestBenchBackends(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-backend", "mutex", "-op", "get"},
		{"-backend", "flock", "-op", "incr"},
		{"-backend", "zone", "-op", "req"},
		{"-backend", "zone", "-op", "count"},
		{"-backend", "zone", "-op", "counter", "-keys", "10"},
	} {
		t.Run(strings.Join(args[:4], ""), func(t *testing.T) {
			t.Parallel()
			rep := benchJSON(t, append(args, "-procs", "1", "-duration", "100ms")...)
			if len(rep.Rows) != 1 || rep.Rows[0].Procs != 1 {
				t.Fatalf("%v: rows %+v", args, rep.Rows)
			}
		})
	}
}

func TestBenchFlockFile(t *testing.T) {
	t.Parallel()
	zone := filepath.Join(t.TempDir(), "z")
	benchJSON(t, "-backend", "flock", "-op", "set", "-zone", zone, "-procs", "2", "-duration", "100ms")
	if _, err := os.Stat(zone + ".flock"); err != nil {
		t.Fatalf("flock file: %v", err)
	}
}

func TestBenchRedis(t *testing.T) {
	t.Parallel()
	r := testutil.StartRedis(t)
	rep := benchJSON(t, "-backend", "redis", "-redis", r.Addr, "-op", "incr", "-procs", "1,2", "-duration", "200ms")
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	benchJSON(t, "-backend", "redis", "-redis", r.Addr, "-op", "count", "-procs", "1", "-duration", "100ms")
	before, err := testutil.RedisDo(r.Addr, "DBSIZE")
	if err != nil {
		t.Fatal(err)
	}
	benchJSON(t, "-backend", "tiered", "-redis", r.Addr, "-op", "count", "-procs", "1,2", "-duration", "300ms")
	if after, err := testutil.RedisDo(r.Addr, "DBSIZE"); err != nil || after == before {
		t.Fatalf("tiered flushed nothing to Redis: DBSIZE %s then %s, %v", before, after, err)
	}
	n, err := testutil.RedisDo(r.Addr, "GET", "bench:0")
	if err != nil || n == "" {
		t.Fatalf("bench:0 = %q, %v after incr", n, err)
	}
}

func TestBenchRedisDown(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := dispatch("", []string{"bench", "-backend", "redis", "-redis", "127.0.0.1:1", "-procs", "1", "-duration", "50ms"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
