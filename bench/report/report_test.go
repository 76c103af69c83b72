package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/RESULTS.golden.md")

const benchOut = `goos: linux
goarch: amd64
pkg: github.com/shmzone/shmzone/dict
cpu: Intel(R) Xeon(R) Processor
BenchmarkOps/op=incr/keys=1000-2         	 3417483	        29.43 ns/op	       0 B/op	       0 allocs/op
BenchmarkOps/op=incr/keys=1000-2         	 3417483	        28.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkOps/op=incr/keys=1000-2         	 3417483	        31.50 ns/op	       0 B/op	       0 allocs/op
BenchmarkProcs/op=incr/keys=hot/procs=2-2   	 2367508	        50.03 ns/op	  40410650 ops/s	       0 B/op	       0 allocs/op
BenchmarkHashKey
    bench_test.go:12: a log line
BenchmarkNoSuffix 	 100	 7 ns/op
PASS
ok  	github.com/shmzone/shmzone/dict	12.3s
`

func TestParseBench(t *testing.T) {
	s, err := parseBench([]byte(benchOut))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, unit string
		want       float64
	}{
		{"BenchmarkOps/op=incr/keys=1000", "ns/op", 29.43},
		{"BenchmarkOps/op=incr/keys=1000", "allocs/op", 0},
		{"BenchmarkProcs/op=incr/keys=hot/procs=2", "ops/s", 40410650},
		{"BenchmarkNoSuffix", "ns/op", 7},
	}
	for _, tt := range tests {
		got, ok := s.get(tt.name, tt.unit)
		if !ok || got != tt.want {
			t.Errorf("get(%q, %q) = %v, %v; want %v, true", tt.name, tt.unit, got, ok, tt.want)
		}
	}
	if lo, hi, _ := s.span("BenchmarkOps/op=incr/keys=1000", "ns/op"); lo != 28 || hi != 31.5 {
		t.Errorf("span = %v–%v, want 28–31.5", lo, hi)
	}
	if _, ok := s.get("BenchmarkHashKey", "ns/op"); ok {
		t.Errorf("a benchmark that printed no result has a sample")
	}
	for _, bad := range []string{
		"BenchmarkX-2 \t 10 \t 5 ns/op \t 7\n",
		"BenchmarkX-2 \t 10 \t five ns/op\n",
	} {
		if _, err := parseBench([]byte(bad)); err == nil {
			t.Errorf("parseBench(%q) = nil error, want one", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
		ok   bool
	}{
		{nil, 0, false},
		{[]float64{3}, 3, true},
		{[]float64{5, 1, 3}, 3, true},
		{[]float64{4, 1, 3, 2}, 2.5, true},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		got, ok := median(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", in, got, ok, tt.want, tt.ok)
		}
		if fmt.Sprint(in) != fmt.Sprint(tt.in) {
			t.Errorf("median reordered its argument: %v", tt.in)
		}
	}
}

func TestParseDensity(t *testing.T) {
	out := "=== RUN   TestDensity\n    density_test.go:42: 170631 counters before the first eviction: 16 shards\n" +
		"=== RUN   TestDensity\n    density_test.go:42: 168893 counters before the first eviction: 16 shards\n"
	if got := parseDensity([]byte(out)); fmt.Sprint(got) != "[170631 168893]" {
		t.Errorf("parseDensity = %v, want [170631 168893]", got)
	}
}

func TestParseNginx(t *testing.T) {
	ng, err := parseNginx([]byte("# nginx/1.22.1\nincr\t1000\t1\t121.0\t27.8\n\nget\t100000\t2\t319\t57\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ng.Meta) != 1 || ng.Meta[0] != "nginx/1.22.1" {
		t.Errorf("Meta = %q", ng.Meta)
	}
	if r := ng.row("get", 100000, 2); r == nil || r.Nginx != 319 || r.Zone != 57 {
		t.Errorf("row(get, 100000, 2) = %+v", r)
	}
	for _, bad := range []string{
		"",
		"# only metadata\n",
		"incr\t1000\t1\t121.0\n",
		"incr\t1000\t1\tfast\t27.8\n",
		"incr\t1000\t1\t0\t27.8\n",
	} {
		if _, err := parseNginx([]byte(bad)); err == nil {
			t.Errorf("parseNginx(%q) = nil error, want one", bad)
		}
	}
}

// TestParseNginxOutput parses testdata/nginx.tsv, the output of a short
// run (N=20000 REPS=1 FORMAT=tsv bash bench/peers/nginx.sh on a busy
// machine: its figures say nothing), and renders its limiter table: every
// row of nginx.sh is there, the reqhot flood's among them.
func TestParseNginxOutput(t *testing.T) {
	out, err := os.ReadFile("testdata/nginx.tsv")
	if err != nil {
		t.Fatal(err)
	}
	ng, err := parseNginx(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ng.Rows) != 14 {
		t.Errorf("%d rows, want 14", len(ng.Rows))
	}
	for _, c := range []struct {
		op            string
		keys, workers int
		nginx, zone   float64
	}{
		{"req", 1000, 1, 327.3, 123.8},
		{"count", 1000, 2, 657.4, 76.2},
		{"reqhot", 4, 1, 104.9, 66.0},
		{"reqhot", 4, 2, 268.0, 94.5},
	} {
		r := ng.row(c.op, c.keys, c.workers)
		if r == nil || r.Nginx != c.nginx || r.Zone != c.zone {
			t.Errorf("row(%s, %d, %d) = %+v, want nginx %g zone %g", c.op, c.keys, c.workers, r, c.nginx, c.zone)
		}
	}
	if !slices.Contains(ng.Meta, "ops_per_s\treqhot\t4\t2\t7463168\t21172506") {
		t.Errorf("no reqhot ops_per_s in Meta %q", ng.Meta)
	}
	v := &view{results: &results{Nginx: ng}}
	v.nginxTable()
	if len(v.NginxLimiter.rows) != 2*len(nginxLimiters) {
		t.Fatalf("NginxLimiter has %d rows, want %d", len(v.NginxLimiter.rows), 2*len(nginxLimiters))
	}
	for _, r := range v.NginxLimiter.rows {
		if slices.Contains(r, missing) {
			t.Errorf("NginxLimiter row %q has a missing cell", r)
		}
	}
	want := []string{"req flood", "4 shared", "2", "268.0", "94.5", "7.46 M", "21.16 M", "2.84×"}
	if got := v.NginxLimiter.rows[5]; !slices.Equal(got, want) {
		t.Errorf("NginxLimiter's reqhot row at 2 processes = %q, want %q", got, want)
	}
	for _, r := range v.NginxPair.rows {
		if isNginxLimiter(r[0]) {
			t.Errorf("NginxPair has the limiter row %q", r)
		}
	}
}

// TestLimitTrafficRef: REF, or ../shared/reference beside the root, must
// hold lua-resty-limit-traffic's req.lua and count.lua.
func TestLimitTrafficRef(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	lib := filepath.Join(dir, "shared", "reference", "lua-resty-limit-traffic", "lib", "resty", "limit")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	noenv := func(string) string { return "" }
	if _, err := limitTrafficRef(root, noenv); err == nil {
		t.Errorf("limitTrafficRef without req.lua and count.lua = nil error, want one")
	}
	for _, f := range []string{"req.lua", "count.lua"} {
		if err := os.WriteFile(filepath.Join(lib, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := filepath.Join(dir, "shared", "reference")
	if ref, err := limitTrafficRef(root, noenv); err != nil || filepath.Clean(ref) != want {
		t.Errorf("limitTrafficRef(%q) = %q, %v, want %q, nil", root, ref, err, want)
	}
	env := func(string) string { return filepath.Join(dir, "elsewhere") }
	if ref, err := limitTrafficRef(root, env); err == nil {
		t.Errorf("limitTrafficRef with REF=%s, which holds nothing = %q, nil, want an error", env("REF"), ref)
	}
}

func TestMedianRows(t *testing.T) {
	rep := func(ops ...float64) workerReport {
		var w workerReport
		for i, o := range ops {
			w.Rows = append(w.Rows, workerRow{Procs: i + 1, OpsPerSec: o, P99: o / 10})
		}
		return w
	}
	rows, err := medianRows([]workerReport{rep(10, 30), rep(30, 10), rep(20, 20)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].OpsPerSec != 20 || rows[1].OpsPerSec != 20 || rows[0].P99 != 2 {
		t.Errorf("medianRows = %+v, want ops/s 20 and 20, p99 2", rows)
	}
	if fmt.Sprint(rows[0].Runs) != "[10 30 20]" {
		t.Errorf("Runs = %v, want every run's ops/s in order", rows[0].Runs)
	}
	if _, err := medianRows([]workerReport{rep(10, 30), rep(10)}); err == nil {
		t.Errorf("medianRows of runs with different procs rows = nil error")
	}
	if _, err := medianRows(nil); err == nil {
		t.Errorf("medianRows(nil) = nil error")
	}
}

// TestRenderGolden renders testdata/results.json, figures of a short real
// run with nginx rows and sample zone-size rows added, and compares it with
// the golden page.
func TestRenderGolden(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(res)
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/RESULTS.golden.md"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./bench/report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("render differs from %s (go test ./bench/report -update rewrites it); got:\n%s", golden, got)
	}
}

// targetVerdict returns the measured and verdict cells of the target whose
// name starts with target.
func targetVerdict(t *testing.T, res *results, target string) string {
	t.Helper()
	v := &view{results: res}
	v.targets()
	for _, r := range v.Targets.rows {
		if strings.HasPrefix(r[0], target) {
			return r[2] + " " + r[3]
		}
	}
	t.Fatalf("no target %q", target)
	return ""
}

// TestTargets checks the verdicts the page draws from the figures.
func TestTargets(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	verdict := func(res *results, target string) string {
		t.Helper()
		return targetVerdict(t, res, target)
	}
	// The fixture's nginx rows: incr 121/27.8 and get 60/57.
	if got := verdict(res, "zone over nginx lua_shared_dict, incr"); got != "4.35× holds" {
		t.Errorf("nginx incr target = %q, want 4.35× holds", got)
	}
	if got := verdict(res, "zone over nginx lua_shared_dict, get"); got != "1.05× **missed**" {
		t.Errorf("nginx get target = %q, want 1.05× **missed**", got)
	}
	// The limiters against lua-resty-limit-traffic, per process: req
	// 330/121.3 at one process, count 185/102.9 at two.
	if got := verdict(res, "limiter Req over nginx resty.limit.req, 1 process"); got != "2.72× holds" {
		t.Errorf("nginx req target at 1 process = %q, want 2.72× holds", got)
	}
	if got := verdict(res, "limiter Count over nginx resty.limit.count, 2 processes"); got != "1.80× **missed**" {
		t.Errorf("nginx count target at 2 processes = %q, want 1.80× **missed**", got)
	}
	// The flood: 250/55 at two processes, over a target of 4×.
	hot := "limiter req, a flood of rejections on 4 keys every process shares, 2 processes, over nginx's 2 workers"
	if got := verdict(res, hot); got != "4.55× holds" {
		t.Errorf("nginx reqhot target = %q, want 4.55× holds", got)
	}
	res.Nginx.row("reqhot", 4, 2).Nginx = 214.5
	if got := verdict(res, hot); got != "3.90× **missed**" {
		t.Errorf("nginx reqhot target, 214.5/55 = %q, want 3.90× **missed**", got)
	}
	res.Nginx.row("count", 1000, 2).Nginx = 205.8
	if got := verdict(res, "limiter Count over nginx resty.limit.count, 2 processes"); got != "2.00× holds" {
		t.Errorf("nginx count target at 2 processes, 205.8/102.9 = %q, want 2.00× holds", got)
	}
	res.Nginx = nil
	if got := verdict(res, "zone over nginx lua_shared_dict, get"); got != "— not measured" {
		t.Errorf("nginx get target without nginx = %q, want not measured", got)
	}
	if got := verdict(res, "limiter Req over nginx resty.limit.req, 2 processes"); got != "— not measured" {
		t.Errorf("nginx req target without nginx = %q, want not measured", got)
	}
	if got := verdict(res, hot); got != "— not measured" {
		t.Errorf("nginx reqhot target without nginx = %q, want not measured", got)
	}
	res.Go["dict-ops"].Samples["BenchmarkOps/op=incr/keys=1000"]["ns/op"] = []float64{29, 31, 30}
	if got := verdict(res, "dict incr, 1,000 keys"); got != "30.0 ns holds" {
		t.Errorf("dict incr target at exactly 30 = %q, want holds", got)
	}
	res.Go["dict-ops"].Samples["BenchmarkOps/op=incr/keys=1000"]["ns/op"] = []float64{29, 31, 31}
	if got := verdict(res, "dict incr, 1,000 keys"); got != "31.0 ns **missed**" {
		t.Errorf("dict incr target at 31 = %q, want missed", got)
	}
	// The two-process targets: procs=2 ops/s over procs=1's.
	if got := verdict(res, "dict incr, 2 processes each on its own"); got != "0.81× **missed**" {
		t.Errorf("dict incr own target = %q, want 0.81× **missed**", got)
	}
	own := res.Go["dict-procs"].Samples
	own["BenchmarkProcs/op=incr/keys=own/procs=1"]["ops/s"] = []float64{10e6}
	own["BenchmarkProcs/op=incr/keys=own/procs=2"]["ops/s"] = []float64{18e6}
	if got := verdict(res, "dict incr, 2 processes each on its own"); got != "1.80× holds" {
		t.Errorf("dict incr own target at exactly 1.8× = %q, want holds", got)
	}
	delete(res.Go["limiter"].Samples, "BenchmarkLimiter/op=count/keys=own/procs=2")
	if got := verdict(res, "limiter count, 2 processes"); got != "— not measured" {
		t.Errorf("limiter count target without its procs=2 run = %q, want not measured", got)
	}
	// The least zone/redis ratio names its row.
	z, r := res.run("zone", "get", 1000), res.run("redis", "get", 1000)
	z.Rows[1].OpsPerSec, r.Rows[1].OpsPerSec = 5e6, 1e5
	if got := verdict(res, "zone over Redis"); got != "50.0× (get at procs 2) **missed**" {
		t.Errorf("zone over Redis = %q, want 50.0× (get at procs 2) **missed**", got)
	}
}

// A target's verdict judges the figure as the page shows it, rounded to the
// cell's digits: a figure that shows as the limit meets it, whatever its
// unrounded digits.
func TestTargetVerdictsJudgeTheShownFigure(t *testing.T) {
	setDictOps := func(name, unit string, x float64) func(*results) {
		return func(res *results) { res.Go["dict-ops"].Samples[name][unit] = []float64{x} }
	}
	setProcs := func(step, name string, one, two float64) func(*results) {
		return func(res *results) {
			res.Go[step].Samples[name+"/procs=1"]["ops/s"] = []float64{one}
			res.Go[step].Samples[name+"/procs=2"]["ops/s"] = []float64{two}
		}
	}
	// Every zone row 200 times its Redis row, but get at procs 2: x times.
	zoneOverRedis := func(x float64) func(*results) {
		return func(res *results) {
			for _, op := range []string{"incr", "get", "set", "req", "count"} {
				z, r := res.run("zone", op, 1000), res.run("redis", op, 1000)
				if z == nil || r == nil {
					continue
				}
				for i := range z.Rows {
					z.Rows[i].OpsPerSec = 200 * r.Rows[i].OpsPerSec
				}
			}
			z, r := res.run("zone", "get", 1000), res.run("redis", "get", 1000)
			z.Rows[1].OpsPerSec = x * r.Rows[1].OpsPerSec
		}
	}
	for _, tc := range []struct {
		name   string
		set    func(*results)
		target string
		want   string
	}{
		{"ns shown as the limit", setDictOps("BenchmarkOps/op=incr/keys=1000", "ns/op", 30.04), "dict incr, 1,000 keys", "30.0 ns holds"},
		{"ns shown over the limit", setDictOps("BenchmarkOps/op=incr/keys=1000", "ns/op", 30.06), "dict incr, 1,000 keys", "30.1 ns **missed**"},
		{"ns below 10 shown as the limit", setDictOps("BenchmarkCoarseNow/clock=coarse", "ns/read", 2.004), "dict clock read", "2.00 ns holds"},
		{"ns below 10 shown over the limit", setDictOps("BenchmarkCoarseNow/clock=coarse", "ns/read", 2.006), "dict clock read", "2.01 ns **missed**"},
		{"scaling shown as the limit", setProcs("dict-procs", "BenchmarkProcs/op=incr/keys=own", 10e6, 17.996e6), "dict incr, 2 processes each on its own", "1.80× holds"},
		{"scaling under the limit", setProcs("dict-procs", "BenchmarkProcs/op=incr/keys=own", 10e6, 17.94e6), "dict incr, 2 processes each on its own", "1.79× **missed**"},
		{"goroutines shown as the limit", func(res *results) {
			res.Go["counter"].Samples["BenchmarkCounter/op=incr-parallel/goroutines=1"]["ops/s"] = []float64{10e6}
			res.Go["counter"].Samples["BenchmarkCounter/op=incr-parallel/goroutines=2"]["ops/s"] = []float64{16.996e6}
		}, "counter, 2 goroutines over 1", "1.70× holds"},
		{"zone over Redis shown as the limit", zoneOverRedis(99.96), "zone over Redis", "100.0× (get at procs 2) holds"},
		{"zone over Redis under the limit", zoneOverRedis(99.94), "zone over Redis", "99.9× (get at procs 2) **missed**"},
		{"nginx shown as the limit", func(res *results) {
			res.Nginx.Rows[0].Nginx, res.Nginx.Rows[0].Zone = 199.7, 100
		}, "zone over nginx lua_shared_dict, incr", "2.00× holds"},
		{"req over incr shown as the limit", func(res *results) {
			res.Go["limiter"].Samples["BenchmarkLimiter/op=req/keys=1000"]["ns/op"] = []float64{45.02}
			res.Go["dict-ops"].Samples["BenchmarkOps/op=incr/keys=1000"]["ns/op"] = []float64{30}
		}, "limiter req decision over a dict incr", "1.50× holds"},
		{"req over incr over the limit", func(res *results) {
			res.Go["limiter"].Samples["BenchmarkLimiter/op=req/keys=1000"]["ns/op"] = []float64{45.2}
			res.Go["dict-ops"].Samples["BenchmarkOps/op=incr/keys=1000"]["ns/op"] = []float64{30}
		}, "limiter req decision over a dict incr", "1.51× **missed**"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := readResults("testdata/results.json")
			if err != nil {
				t.Fatal(err)
			}
			tc.set(res)
			if got := targetVerdict(t, res, tc.target); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.target, got, tc.want)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-count", "0"},
		{"-reps", "0"},
		{"-duration", "1ms"},
		{"-procs", "1,x"},
		{"-procs", "0"},
		{"-density", "0"},
		{"-only", "nginx"},
		{"-only", "e2e", "-from", "testdata/results.json"},
		{"-e2e-rounds", "0"},
		{"-e2e-duration", "1500ms"},
		{"-e2e-duration", "0s"},
		{"stray"},
		{"-nosuch"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr %q", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-reps") {
		t.Errorf("run(-h) = %d, stderr %q; want 0 and the flags", code, errb.String())
	}
}

// TestFromRewritesPage re-renders a page from a results file, and a bad
// results file leaves the old page as it was.
func TestFromRewritesPage(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "RESULTS.md")
	os.WriteFile(page, []byte("old page\n"), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"-from", bad, "-out", page}, &out, &errb); code != 1 {
		t.Errorf("run(-from bad.json) = %d, want 1", code)
	}
	if b, _ := os.ReadFile(page); string(b) != "old page\n" {
		t.Errorf("a failed run changed the page to %q", b)
	}
	if code := run([]string{"-from", "testdata/results.json", "-out", page}, &out, &errb); code != 0 {
		t.Fatalf("run(-from) = %d; stderr %s", code, errb.String())
	}
	b, _ := os.ReadFile(page)
	if !bytes.HasPrefix(b, []byte("# Benchmark results")) {
		t.Errorf("page starts %q", b[:min(len(b), 40)])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the directory, want the page and bad.json: a temporary file was left", len(ents))
	}
}

// fakeRunner answers the commands measure runs with canned output.
type fakeRunner struct {
	t     *testing.T
	calls []string
	dirs  []string // the directory of each call
	fail  string   // a command line containing this fails
	// wrk answers wrk's runs; nil fails them.
	wrk func(args []string) []byte
}

func (f *fakeRunner) run(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	line := filepath.Base(name) + " " + strings.Join(args, " ")
	f.calls = append(f.calls, line)
	f.dirs = append(f.dirs, dir)
	if f.fail != "" && strings.Contains(line, f.fail) {
		return nil, errors.New(line + ": exit status 1")
	}
	switch {
	case strings.HasPrefix(line, "go env"):
		return []byte("go1.99\nlinux\namd64\n"), nil
	case strings.HasPrefix(line, "go build"):
		return nil, nil
	case strings.Contains(line, "TestDensity"):
		return []byte(strings.Repeat("    density_test.go:42: 170000 counters before the first eviction: 16 shards\n", 2)), nil
	case strings.HasPrefix(line, "go test"):
		return []byte(benchOut), nil
	case strings.HasPrefix(line, "wrk ") && f.wrk != nil:
		return f.wrk(args), nil
	case strings.HasPrefix(line, "worker bench"):
		for i, a := range args {
			if a == "-chart" {
				os.WriteFile(args[i+1], []byte("<svg/>"), 0o644)
			}
		}
		rep := map[string]any{"rows": []map[string]any{
			{"procs": 1, "ops_per_sec": 1e6, "ns_per_op": 1000, "p50_ns": 900, "p99_ns": 2000, "p999_ns": 3000},
			{"procs": 2, "ops_per_sec": 1.5e6, "ns_per_op": 1333, "p50_ns": 900, "p99_ns": 2000, "p999_ns": 3000},
		}}
		return json.Marshal(rep)
	}
	f.t.Errorf("unexpected command %q", line)
	return nil, errors.New("unexpected")
}

func fakeMeasurer(t *testing.T, f *fakeRunner) (*measurer, *bytes.Buffer) {
	var log bytes.Buffer
	clock := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	c := config{root: ".", count: 5, reps: 2, duration: time.Second, procs: "1,2", density: 2, nginx: true}
	m := newMeasurer(c, f.run, newProgress(&log, now))
	m.look = func(string) (string, error) { return "", errors.New("not installed") }
	return m, &log
}

// TestMeasureSteps runs every step against canned output, on a machine
// without redis-server, a browser or nginx: each is skipped and said to be.
func TestMeasureSteps(t *testing.T) {
	f := &fakeRunner{t: t}
	m, log := fakeMeasurer(t, f)
	chart := filepath.Join(t.TempDir(), "scaling.svg")
	res, err := m.measure(context.Background(), chart)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(chart); string(b) != "<svg/>" {
		t.Errorf("chart = %q, want the worker's SVG", b)
	}
	// 5 Go steps, redistier skipped, density, build, the matrix without
	// its redis and tiered runs twice each, the chart; browser and nginx
	// skipped.
	wantRuns := len(matrixPlan(false)) * 2
	if n := strings.Count(strings.Join(f.calls, "\n"), "worker bench"); n != wantRuns+1 {
		t.Errorf("%d worker bench runs, want %d", n, wantRuns+1)
	}
	if len(res.Matrix) != len(matrixPlan(false)) || res.Matrix[0].Rows[1].OpsPerSec != 1.5e6 {
		t.Errorf("Matrix = %+v", res.Matrix)
	}
	if n := strings.Count(strings.Join(f.calls, "\n"), "-keyset own"); n != len(ownOps)*2 {
		t.Errorf("%d worker bench runs with -keyset own, want %d", n, len(ownOps)*2)
	}
	if r := res.runKeyset("zone", "incr", 1000, "own"); r == nil || !strings.HasSuffix(r.Command, "-keyset own") {
		t.Errorf("zone incr -keyset own run = %+v", r)
	}
	if r := res.run("zone", "incr", 1000); r == nil || r.Keyset != "" || strings.Contains(r.Command, "-keyset") {
		t.Errorf("zone incr run at the default keyset = %+v", r)
	}
	// contrib/fiber, contrib/fasthttp and contrib/xxh3cmp are modules of
	// their own: their benchmarks run in their directories, and the page's
	// command says so.
	inModule := map[string]string{"fiber": "contrib/fiber", "fasthttp": "contrib/fasthttp", "keyhash": "contrib/xxh3cmp"}
	// The benchmark runs, in the order of goSteps, redistier's skipped.
	var benchRuns []int
	for i, c := range f.calls {
		if strings.HasPrefix(c, "go test") && strings.Contains(c, " -bench ") {
			benchRuns = append(benchRuns, i)
		}
	}
	ran := slices.DeleteFunc(slices.Clone(goSteps), func(g goSpec) bool { return g.needsRedis })
	if len(benchRuns) != len(ran) {
		t.Fatalf("%d go test -bench runs, want %d: %q", len(benchRuns), len(ran), f.calls)
	}
	for k, g := range ran {
		want := inModule[g.id]
		if g.dir != want {
			t.Errorf("go step %s runs in %q, want %q", g.id, g.dir, want)
		}
		cmd := res.Go[g.id].Command
		i := benchRuns[k]
		if !strings.Contains(f.calls[i], "-bench "+g.bench+" ") || !strings.HasSuffix(f.calls[i], " "+g.pkg) {
			t.Errorf("run %d is %q, want go step %s", k, f.calls[i], g.id)
		}
		if wantDir := filepath.Join(".", want); f.dirs[i] != wantDir {
			t.Errorf("%q ran in %q, want %q", f.calls[i], f.dirs[i], wantDir)
		}
		if want != "" && !strings.HasPrefix(cmd, "cd "+want+" && go test ") {
			t.Errorf("%s command = %q, want cd %s && go test …", g.id, cmd, want)
		}
		if want == "" && !strings.HasPrefix(cmd, "go test ") {
			t.Errorf("%s command = %q, want go test …", g.id, cmd)
		}
	}
	if len(res.Missing) != 5 {
		t.Errorf("Missing = %q, want redistier, redis rows, browser, nginx and wrk", res.Missing)
	}
	if res.E2E != nil {
		t.Errorf("E2E = %+v without wrk, want nil", res.E2E)
	}
	total := len(goSteps) + 2 + wantRuns + 3 + 1
	if !strings.Contains(log.String(), fmt.Sprintf("[%d/%d ", total, total)) || strings.Contains(log.String(), fmt.Sprintf("[%d/", total+1)) {
		t.Errorf("progress does not count to %d:\n%s", total, log)
	}
	if _, err := render(res); err != nil {
		t.Errorf("render: %v", err)
	}
}

// TestMeasureFails: a failing step fails the run, and the chart is not
// written.
func TestMeasureFails(t *testing.T) {
	for _, step := range []string{"BenchmarkProcs", "BenchmarkMiddleware", "TestDensity", "go build", "-op set"} {
		f := &fakeRunner{t: t, fail: step}
		m, _ := fakeMeasurer(t, f)
		chart := filepath.Join(t.TempDir(), "scaling.svg")
		if _, err := m.measure(context.Background(), chart); err == nil || !strings.Contains(err.Error(), step) {
			t.Errorf("measure with %q failing = %v, want its error", step, err)
		}
		if _, err := os.Stat(chart); !os.IsNotExist(err) {
			t.Errorf("measure with %q failing wrote the chart", step)
		}
	}
}

// TestStartRedis starts the run's redis-server, which answers PING until it
// is stopped.
func TestStartRedis(t *testing.T) {
	testutil.RequireRedis(t)
	ctx := context.Background()
	addr, stop, err := startRedis(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, addr); err != nil {
		stop()
		t.Fatalf("ping(%s) after startRedis = %v, want nil", addr, err)
	}
	stop()
	if err := ping(ctx, addr); err == nil {
		t.Errorf("ping(%s) after stop = nil, want an error", addr)
	}
}

// TestPingWantsPong: a server that answers PING with anything but +PONG is
// not ready.
func TestPingWantsPong(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		got <- string(buf[:n])
		c.Write([]byte("-LOADING Redis is loading the dataset in memory\r\n"))
	}()
	err = ping(context.Background(), l.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "LOADING") {
		t.Errorf("ping to a loading server = %v, want its -LOADING answer", err)
	}
	if req := <-got; req != "*1\r\n$4\r\nPING\r\n" {
		t.Errorf("ping sent %q, want a RESP PING", req)
	}
}

// TestKeyMemory: the counter's bytes per key come from its benchmark, and a
// run without that benchmark says so instead of giving a figure.
func TestKeyMemory(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := render(res)
	if err != nil {
		t.Fatal(err)
	}
	if want := "CPU count (it sets the stripes per key):\nnot measured in this run;"; !strings.Contains(string(page), want) {
		t.Errorf("page without the key-memory benchmark lacks %q", want)
	}
	res.Go["counter"].Samples["BenchmarkCounter/"+keyMemoryBench] = map[string][]float64{"B/key": {223, 222.1, 240}}
	page, err = render(res)
	if err != nil {
		t.Fatal(err)
	}
	if want := "CPU count (it sets the stripes per key):\n**223 B** a key."; !strings.Contains(string(page), want) {
		t.Errorf("page with B/key 223, 222.1, 240 lacks %q (the median)", want)
	}
}

// TestFiberTable: each middleware's overhead is its ns/op less the no-limiter
// baseline's at the same goroutine count, and a run without the fiber step
// shows the rows unmeasured, without a command.
func TestFiberTable(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	smp := res.Go["fiber"].Samples
	smp["BenchmarkMiddleware/mw=none/goroutines=2"]["ns/op"] = []float64{700, 600, 900}
	smp["BenchmarkMiddleware/mw=shmfiber/goroutines=2"]["ns/op"] = []float64{950}
	smp["BenchmarkMiddleware/mw=fiberlimiter/goroutines=2"]["ns/op"] = []float64{650}
	delete(smp, "BenchmarkMiddleware/mw=shmfiber/goroutines=1")
	v := &view{results: res}
	v.fiberTable()
	want := [][]string{
		{"none", "1", "817.7", "1", "baseline"},
		{"shmfiber", "1", "—", "—", "—"},
		{"fiberlimiter", "1", "977.0", "5", "+159.3 ns"},
		{"none", "2", "700.0", "1", "baseline"},
		{"shmfiber", "2", "950.0", "7", "+250.0 ns"},
		{"fiberlimiter", "2", "650.0", "5", "−50.0 ns"},
	}
	if fmt.Sprint(v.Fiber.rows) != fmt.Sprint(want) {
		t.Errorf("fiber rows = %q, want %q", v.Fiber.rows, want)
	}

	delete(res.Go, "fiber")
	page, err := render(res)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(page), "## fiber middleware overhead per request\n")
	sec, _, _ = strings.Cut(sec, "\n## ")
	if strings.Contains(sec, "```sh") {
		t.Errorf("page without the fiber step shows a command:\n%s", sec)
	}
	for _, row := range []string{"| none | 1 | — | — | baseline |", "| shmfiber | 2 | — | — | — |"} {
		if !strings.Contains(sec, row) {
			t.Errorf("page without the fiber step lacks %q (the machine's 2 CPUs give goroutines=2):\n%s", row, sec)
		}
	}
}

// The limiter/redistier section shows its step's command, and a run without
// the step (no redis-server) shows none, not an empty sh block.
func TestRedistierSectionCommand(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	section := func() string {
		t.Helper()
		page, err := render(res)
		if err != nil {
			t.Fatal(err)
		}
		_, sec, ok := strings.Cut(string(page), "## limiter/redistier\n")
		if !ok {
			t.Fatalf("page lacks the limiter/redistier section:\n%s", page)
		}
		sec, _, _ = strings.Cut(sec, "\n## ")
		return sec
	}
	cmd := res.Go["redistier"].Command
	if want := "```sh\n" + cmd + "\n```\n"; cmd == "" || !strings.Contains(section(), want) {
		t.Errorf("limiter/redistier section lacks its command %q:\n%s", want, section())
	}
	delete(res.Go, "redistier")
	if sec := section(); strings.Contains(sec, "```sh") {
		t.Errorf("page without the redistier step shows a command block:\n%s", sec)
	}
}

// The tiered flush target judges the least rate of its four rows, as the
// page shows it.
func TestTieredFlushTarget(t *testing.T) {
	row := func(rates ...float64) string {
		smp := samples{}
		i := 0
		for _, keys := range []int{10_000, 100_000} {
			for _, b := range []string{"redis-loopback", "cluster-loopback"} {
				smp[fmt.Sprintf("BenchmarkTieredFlush/keys=%d/backend=%s", keys, b)] = map[string][]float64{"keys/s": {rates[i]}}
				i++
			}
		}
		page, err := render(&results{Go: map[string]goStep{"redistier": {Samples: smp}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(page), "\n") {
			if strings.HasPrefix(l, "| tiered flush,") {
				return l
			}
		}
		t.Fatalf("no tiered flush target in:\n%s", page)
		return ""
	}
	if got, want := row(272e3, 149e3, 275e3, 185e3), "| 149.0 k (10,000 keys, cluster-loopback) | holds |"; !strings.HasSuffix(got, want) {
		t.Errorf("target row = %q, want it to end %q", got, want)
	}
	if got, want := row(272e3, 149e3, 24.96e3, 185e3), "| 25.0 k (100,000 keys, redis-loopback) | holds |"; !strings.HasSuffix(got, want) {
		t.Errorf("target row = %q, want it to end %q", got, want)
	}
	if got, want := row(272e3, 149e3, 24.9e3, 185e3), "| 24.9 k (100,000 keys, redis-loopback) | **missed** |"; !strings.HasSuffix(got, want) {
		t.Errorf("target row = %q, want it to end %q", got, want)
	}
}

// TestZonesTMPDIR: -zones makes the run's TMPDIR in its directory, which
// every command the run starts inherits, and the end of the run removes
// it and gives TMPDIR back. A file is no directory for it.
func TestZonesTMPDIR(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", "/keep")
	done, err := zonesTMPDIR(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := os.Getenv("TMPDIR")
	if filepath.Dir(tmp) != dir {
		t.Errorf("TMPDIR = %q, want a directory in %q", tmp, dir)
	}
	if fi, err := os.Stat(tmp); err != nil || !fi.IsDir() {
		t.Errorf("Stat(TMPDIR) = %v, %v: want a directory", fi, err)
	}
	done()
	if got := os.Getenv("TMPDIR"); got != "/keep" {
		t.Errorf("TMPDIR after the run = %q, want /keep back", got)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("Stat(%s) after the run = %v, want it removed", tmp, err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := zonesTMPDIR(file); err == nil {
		t.Errorf("zonesTMPDIR(a file) = nil error")
	}
}
