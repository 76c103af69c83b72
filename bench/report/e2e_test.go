package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wrkOut is wrk's output of a 1-second run against a server under a 429
// flood, with socket errors added.
const wrkOut = `Running 1s test @ http://127.0.0.1:18123/
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     4.12ms   12.19ms 102.11ms   95.04%
    Req/Sec    17.98k     8.38k   42.62k    80.00%
  36264 requests in 1.09s, 11.21MB read
  Socket errors: connect 0, read 2, write 1, timeout 4
  Non-2xx or 3xx responses: 36263
Requests/sec:  33294.62
Transfer/sec:     10.29MB
`

func TestParseWrk(t *testing.T) {
	w, err := parseWrk([]byte(wrkOut))
	if err != nil {
		t.Fatal(err)
	}
	if want := (wrkResult{requests: 36264, non2xx: 36263, reqPerSec: 33294.62, socketErrors: 7}); w != want {
		t.Errorf("parseWrk = %+v, want %+v", w, want)
	}
	// Without rejections or socket errors, wrk leaves their lines out.
	plain := strings.Join(slices.DeleteFunc(strings.Split(wrkOut, "\n"), func(l string) bool {
		return strings.Contains(l, "Socket errors") || strings.Contains(l, "Non-2xx")
	}), "\n")
	if w, err := parseWrk([]byte(plain)); err != nil || w.non2xx != 0 || w.socketErrors != 0 || w.requests != 36264 {
		t.Errorf("parseWrk without rejections = %+v, %v; want 36264 requests, none rejected", w, err)
	}
	for _, bad := range []string{
		"",
		"unable to connect to 127.0.0.1:1 Connection refused\n",
		strings.Replace(wrkOut, "Requests/sec:  33294.62", "", 1),
		strings.Replace(wrkOut, "36264 requests in", "requests in", 1),
		strings.Replace(strings.Replace(wrkOut, "36264 requests", "0 requests", 1), "33294.62", "0.00", 1),
	} {
		if w, err := parseWrk([]byte(bad)); err == nil {
			t.Errorf("parseWrk(%q) = %+v, nil error; want one", bad, w)
		}
	}
}

func TestParseStat(t *testing.T) {
	// utime 150 and stime 50 ticks: 2 s. The command name holds a space
	// and parentheses.
	line := "4242 (e2e (srv) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 50 3 4 20 0 9 0 12345 1000000 500 18446744073709551615\n"
	if got, err := parseStat([]byte(line)); err != nil || got != 2*time.Second {
		t.Errorf("parseStat = %v, %v; want 2s, nil", got, err)
	}
	for _, bad := range []string{
		"",
		"4242 e2e S 1 4242",
		"4242 (e2e) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150",
		"4242 (e2e) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 50 3",
		"4242 (e2e) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 -5 3",
	} {
		if got, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %v, nil error; want one", bad, got)
		}
	}
}

func TestReadCPU(t *testing.T) {
	if _, err := readCPU([]int{os.Getpid(), os.Getppid()}); err != nil {
		t.Errorf("readCPU of this process and its parent: %v", err)
	}
	if _, err := readCPU([]int{os.Getpid(), 0}); err == nil {
		t.Errorf("readCPU of pid 0 = nil error, want one")
	}
}

// TestE2EOrder: a round runs every configuration of every framework once,
// a framework's together; over the rounds, each takes every place.
func TestE2EOrder(t *testing.T) {
	nf, nc := len(e2eFrameworks), len(e2eConfigs)
	firstFramework := map[int]bool{}
	firstConfig := map[e2eCase]bool{} // framework and its first config
	for r := range nf * nc {
		o := e2eOrder(r)
		seen := map[e2eCase]bool{}
		for i, c := range o {
			if seen[c] {
				t.Errorf("round %d runs %+v twice", r, c)
			}
			seen[c] = true
			if i%nc != 0 && o[i-1].framework != c.framework {
				t.Errorf("round %d: framework %d's runs are not together: %v", r, c.framework, o)
			}
			if i%nc == 0 {
				firstConfig[c] = true
			}
		}
		if len(seen) != nf*nc {
			t.Errorf("round %d runs %d configurations, want %d", r, len(seen), nf*nc)
		}
		firstFramework[o[0].framework] = true
	}
	if len(firstFramework) != nf {
		t.Errorf("frameworks that came first: %v, want all %d", firstFramework, nf)
	}
	if len(firstConfig) != nf*nc {
		t.Errorf("%d framework and configuration pairs came first in their block, want all %d", len(firstConfig), nf*nc)
	}
}

// TestMedianRatio: the ratio of a round compares its own runs, the median
// is over the rounds that have both runs, and a figure of zero counts for
// nothing.
func TestMedianRatio(t *testing.T) {
	run := func(round int, fw, cfg string, rps float64, requests int64, cpu time.Duration) e2eRun {
		return e2eRun{Round: round, Framework: fw, Config: cfg, ReqPerSec: rps, Requests: requests, CPU: cpu}
	}
	s := &e2eStep{Runs: []e2eRun{
		run(0, "fiber", "none", 100, 1000, 10*time.Millisecond),
		run(0, "fiber", "headers", 90, 1000, 11*time.Millisecond),
		run(1, "fiber", "headers", 40, 1000, 20*time.Millisecond), // round 1 of a slower machine
		run(1, "fiber", "none", 50, 1000, 16*time.Millisecond),
		run(2, "fiber", "none", 100, 1000, 10*time.Millisecond),
		run(2, "fiber", "headers", 99, 1000, 10*time.Millisecond),
		run(3, "fiber", "headers", 10, 1000, time.Millisecond), // no baseline this round
		run(4, "fiber", "none", 0, 0, 0),
		run(4, "fiber", "headers", 10, 1000, time.Millisecond), // a baseline of zero
	}}
	if got, ok := s.medianRatio("fiber", "headers", reqPerSec); !ok || fmt.Sprintf("%.3f", got) != "0.900" {
		t.Errorf("req/s ratio = %v, %v; want the median of 0.9, 0.8, 0.99: 0.9", got, ok)
	}
	if got, ok := s.medianRatio("fiber", "headers", cpuPerReq); !ok || fmt.Sprintf("%.3f", got) != "1.100" {
		t.Errorf("CPU ratio = %v, %v; want the median of 1.1, 1.25, 1: 1.1", got, ok)
	}
	if got, ok := s.medianRatio("fasthttp", "headers", reqPerSec); ok {
		t.Errorf("ratio of a framework without runs = %v, true; want false", got)
	}
	if got, ok := (*e2eStep)(nil).medianRatio("fiber", "headers", reqPerSec); ok {
		t.Errorf("ratio of no step = %v, true; want false", got)
	}
	if got := run(0, "fiber", "none", 1, 2000, 50*time.Millisecond).cpuPerRequest(); got != 25 {
		t.Errorf("cpuPerRequest of 50 ms over 2,000 requests = %v µs, want 25", got)
	}
	med, runs := s.medianOf("fiber", "none", reqPerSec)
	if med != 75 || len(runs) != 4 {
		t.Errorf("medianOf(fiber, none) = %v over %d runs, want 75, of 100, 50, 100 and 0, over 4", med, len(runs))
	}
}

func TestCheckRejected(t *testing.T) {
	for _, tc := range []struct {
		config             string
		requests, rejected int64
		d                  time.Duration
		ok                 bool
	}{
		{"none", 1000, 0, time.Second, true},
		{"headers", 1000, 1, time.Second, false},
		{"flood", 100000, 100000 - e2eClients, time.Second, true},   // each client's first request passed
		{"flood", 100000, 100000 - 2*e2eClients, time.Second, true}, // a minute's window ended
		{"flood", 100000, 100000 - 2*e2eClients - 1, time.Second, false},
		{"flood", 100000, 100000 - 3*e2eClients, time.Minute, true},
		{"flood", 100000, 0, time.Second, false},
	} {
		r := e2eRun{Config: tc.config, Requests: tc.requests, Rejected: tc.rejected}
		if err := checkRejected(r, tc.d); (err == nil) != tc.ok {
			t.Errorf("checkRejected(%s, %d of %d rejected in %v) = %v, want ok %v", tc.config, tc.rejected, tc.requests, tc.d, err, tc.ok)
		}
	}
}

// fakeE2E is a measurer's end to end under canned figures: per
// configuration, the requests of a run, its req/s, and the CPU time the
// server spends in it.
type fakeE2E struct {
	f       *fakeRunner
	server  []string // the args of the server running, or nil
	cpu     time.Duration
	starts  int
	stops   int
	startOK bool
	// rejectAll makes every configuration reject every request.
	rejectAll bool
}

var fakeFigures = map[string]struct {
	requests int64
	cpu      time.Duration
}{
	"none":      {30000, 300 * time.Millisecond},
	"headers":   {28500, 313500 * time.Microsecond},
	"noheaders": {29400, 294 * time.Millisecond},
	"flood":     {33000, 297 * time.Millisecond},
	"static":    {29700, 300 * time.Millisecond},
}

// configOf tells the configuration from a server's args.
func configOf(args []string) string {
	a := strings.Join(args, " ")
	switch {
	case strings.Contains(a, "-limiter none"):
		return "none"
	case strings.Contains(a, "-limiter static"):
		return "static"
	case strings.Contains(a, "-limit 1 "):
		return "flood"
	case strings.Contains(a, "-headers=false"):
		return "noheaders"
	}
	return "headers"
}

func (e *fakeE2E) install(m *measurer) {
	m.look = func(name string) (string, error) {
		if name == "wrk" {
			return "/usr/bin/wrk", nil
		}
		return "", errors.New("not installed")
	}
	m.serve = func(ctx context.Context, bin string, args []string) (*e2eServer, error) {
		if e.server != nil {
			e.f.t.Errorf("a server started while another runs: %q", args)
		}
		e.starts++
		if !e.startOK {
			return nil, errors.New("exited before it was ready")
		}
		e.server = args
		return &e2eServer{pids: []int{10, 11, 12}, stop: func() error {
			e.stops++
			e.server = nil
			return nil
		}}, nil
	}
	m.cpu = func(pids []int) (time.Duration, error) {
		if len(pids) != 3 {
			e.f.t.Errorf("cpu of %v, want the master and 2 children", pids)
		}
		return e.cpu, nil
	}
	e.f.wrk = func(args []string) []byte {
		if e.server == nil {
			e.f.t.Errorf("wrk %q with no server running", args)
			return nil
		}
		addr := e.server[slices.Index(e.server, "-addr")+1]
		if url := args[len(args)-1]; url != "http://"+addr+"/" {
			e.f.t.Errorf("wrk against %s, want the server's address %s", url, addr)
		}
		fig := fakeFigures[configOf(e.server)]
		e.cpu += fig.cpu
		rejected := int64(0)
		if configOf(e.server) == "flood" {
			rejected = fig.requests - 1
		}
		if e.rejectAll {
			rejected = fig.requests
		}
		out := fmt.Sprintf("  %d requests in 1.00s, 1.00MB read\n", fig.requests)
		if rejected > 0 {
			out += fmt.Sprintf("  Non-2xx or 3xx responses: %d\n", rejected)
		}
		return []byte(out + fmt.Sprintf("Requests/sec: %d.00\n", fig.requests))
	}
}

// TestMeasureE2E runs the end-to-end section against canned servers and
// wrk output: the rounds, the order, the figures, and a server stopped
// after each run.
func TestMeasureE2E(t *testing.T) {
	f := &fakeRunner{t: t}
	m, log := fakeMeasurer(t, f)
	m.c.e2eRounds, m.c.e2eDuration = 3, 2*time.Second
	e := &fakeE2E{f: f, startOK: true}
	e.install(m)
	m.tmp = t.TempDir()
	m.prog.plan(m.e2eSteps())
	res := &results{}
	if err := m.e2e(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	n := 3 * len(e2eFrameworks) * len(e2eConfigs)
	if s := res.E2E; s == nil || len(s.Runs) != n || s.Rounds != 3 || s.Duration != "2s" {
		t.Fatalf("E2E = %+v, want %d runs over 3 rounds of 2s", s, n)
	}
	if e.starts != n || e.stops != n {
		t.Errorf("%d servers started and %d stopped, want %d and %d", e.starts, e.stops, n, n)
	}
	if want := "go build -o " + m.tmp + "/e2eserver ./cmd/e2eserver"; !slices.Contains(f.calls, want) || f.dirs[slices.Index(f.calls, want)] != "contrib/fleet" {
		t.Errorf("calls %q in %q, want %q in contrib/fleet", f.calls, f.dirs, want)
	}
	for i, r := range res.E2E.Runs {
		want := e2eOrder(i / (n / 3))[i%(n/3)]
		if r.Round != i/(n/3) || r.Framework != e2eFrameworks[want.framework].id || r.Config != e2eConfigs[want.config].id {
			t.Errorf("run %d = %s/%s in round %d, want e2eOrder's %+v", i, r.Framework, r.Config, r.Round, want)
		}
	}
	s := res.E2E
	if r := s.runOf(1, "fasthttp", "flood"); r == nil || r.Requests != 33000 || r.Rejected != 32999 || r.CPU != 297*time.Millisecond || fmt.Sprintf("%.1f", r.cpuPerRequest()) != "9.0" {
		t.Errorf("fasthttp flood run of round 1 = %+v, want 33,000 requests, 32,999 rejected, 9 µs of CPU each", r)
	}
	if x, ok := s.medianRatio("fiber", "headers", cpuPerReq); !ok || fmt.Sprintf("%.2f", x) != "1.10" {
		t.Errorf("fiber's CPU per request, headers over none = %v, %v; want 1.10", x, ok)
	}
	if s.Wrk != "-t2 -c64 -d2s -s clients.lua http://127.0.0.1:PORT/" || !strings.HasPrefix(s.Server, "e2eserver -framework FRAMEWORK FLAGS -zone ZONE") {
		t.Errorf("commands: wrk %q, server %q", s.Wrk, s.Server)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("[%d/%d ", n+1, n+1)) {
		t.Errorf("progress does not count to %d:\n%s", n+1, log)
	}
	if ents, _ := os.ReadDir(m.tmp); len(ents) != 0 {
		t.Errorf("files left in the run's directory: %v", ents)
	}
}

// TestMeasureE2EFails: a server that does not start, or a run that
// rejects what it should not, fails the section, and no server is left
// running.
func TestMeasureE2EFails(t *testing.T) {
	for _, tc := range []struct {
		name      string
		startOK   bool
		rejectAll bool
		want      string
	}{
		{"no server", false, false, "exited before it was ready"},
		{"rejections", true, true, "responses were not 2xx or 3xx, want none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRunner{t: t}
			m, _ := fakeMeasurer(t, f)
			m.c.e2eRounds, m.c.e2eDuration = 1, time.Second
			e := &fakeE2E{f: f, startOK: tc.startOK, rejectAll: tc.rejectAll}
			e.install(m)
			m.tmp = t.TempDir()
			res := &results{}
			err := m.e2e(context.Background(), res)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("e2e = %v, want an error containing %q", err, tc.want)
			}
			if e.server != nil {
				t.Errorf("a server still runs: %q", e.server)
			}
			if tc.startOK && e.stops != e.starts {
				t.Errorf("%d servers started, %d stopped", e.starts, e.stops)
			}
			if res.E2E != nil {
				t.Errorf("E2E = %+v after a failure, want nil", res.E2E)
			}
		})
	}
}

// TestMeasureOnlyE2E measures the section into the results of an earlier
// run: the section, its Go benchmarks and its line of Missing change, and
// nothing else does. Without wrk, it fails.
func TestMeasureOnlyE2E(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	res.E2E = nil
	res.Missing = append(res.Missing, e2eWhat+": wrk is not installed (make bench-deps)")
	before := marshalResults(res)
	f := &fakeRunner{t: t}
	m, _ := fakeMeasurer(t, f)
	m.c.e2eRounds, m.c.e2eDuration = 1, time.Second
	if err := m.measureE2E(context.Background(), res); err == nil || !strings.Contains(err.Error(), "wrk") {
		t.Errorf("measureE2E without wrk = %v, want an error naming wrk", err)
	}
	if !bytes.Equal(marshalResults(res), before) {
		t.Errorf("a failed measureE2E changed the results")
	}

	e := &fakeE2E{f: f, startOK: true}
	e.install(m)
	old, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.measureE2E(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	if res.E2E == nil || !res.E2E.Apart || len(res.E2E.Runs) != len(e2eFrameworks)*len(e2eConfigs) {
		t.Errorf("E2E = %+v, want one round, measured apart", res.E2E)
	}
	if fmt.Sprint(res.Missing) != fmt.Sprint(old.Missing) {
		t.Errorf("Missing = %q, want %q: the line of wrk removed", res.Missing, old.Missing)
	}
	for _, g := range goSteps {
		changed := fmt.Sprint(res.Go[g.id]) != fmt.Sprint(old.Go[g.id])
		if changed != g.e2e {
			t.Errorf("go step %s changed: %v, want %v", g.id, changed, g.e2e)
		}
	}
	// Everything else is as it was.
	res.E2E, old.E2E = nil, nil
	res.Go, old.Go = nil, nil
	if !bytes.Equal(marshalResults(res), marshalResults(old)) {
		t.Errorf("measureE2E changed more than its section")
	}
}

// TestE2ESection: the page's ratios, raw medians and targets come from the
// runs, and a run without the section says so with its rows unmeasured.
func TestE2ESection(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	res.E2E.Runs = nil
	for r := range 3 {
		for _, fw := range e2eFrameworks {
			for _, c := range e2eConfigs {
				fig := fakeFigures[c.id]
				rps := float64(fig.requests) * float64(r+1) // a faster machine each round
				res.E2E.Runs = append(res.E2E.Runs, e2eRun{Round: r, Framework: fw.id, Config: c.id,
					Requests: fig.requests, ReqPerSec: rps, CPU: fig.cpu, SocketErrors: int64(r)})
			}
		}
	}
	v := &view{results: res}
	v.e2eTables()
	if got, want := fmt.Sprint(v.E2ERatios.rows[1]), "[fasthttp 0.95× 1.10× 0.98× 1.00× 1.10× 0.99× 1.01×]"; got != want {
		t.Errorf("fasthttp's ratios = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(v.E2ERuns.rows[3]), "[net/http 429 flood `-limiter count -limit 1` 66.0 k 9.00 3 33.0 k, 66.0 k, 99.0 k]"; got != want {
		t.Errorf("net/http's flood row = %s, want %s", got, want)
	}
	for target, want := range map[string]string{
		"end to end, fiber: req/s with the limiter and headers over none":                  "0.95× holds",
		"end to end, fiber: server CPU per request with the limiter and headers over none": "1.10× **missed**",
		"end to end, net/http: req/s under a 429 flood over none":                          "1.10× holds",
	} {
		if got := targetVerdict(t, res, target); got != want {
			t.Errorf("%s = %q, want %q", target, got, want)
		}
	}

	res.E2E = nil
	page, err := render(res)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(page), "## End to end: prefork servers under wrk\n")
	for _, want := range []string{"\nNot measured in this run.", "| fiber | — | — | — | — | — |", "| fasthttp | 429 flood | `-limiter count -limit 1` | — | — | — | — |"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section without its runs lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(string(page), "later run") {
		t.Errorf("page without the section says it came from a later run")
	}
	if got := targetVerdict(t, res, "end to end, fiber: req/s under a 429 flood"); got != "— not measured" {
		t.Errorf("flood target without the section = %q, want not measured", got)
	}
}

// TestStartE2EServer runs shell scripts in the place of the server: one
// that writes its ready line and exits 0 on SIGTERM, and ones that fail
// before they are ready.
func TestStartE2EServer(t *testing.T) {
	ctx := context.Background()
	const serve = `trap 'exit 0' TERM; echo "child pid=$$ ready (slot 0)"; echo "ready children=$$,$$"; while :; do sleep 0.05; done`
	srv, err := startE2EServer(ctx, "/bin/sh", []string{"-c", serve})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.pids) != 3 || srv.pids[1] != srv.pids[0] || srv.pids[2] != srv.pids[0] {
		t.Errorf("pids = %v, want the shell's three times", srv.pids)
	}
	if _, err := readCPU(srv.pids); err != nil {
		t.Errorf("readCPU of the server: %v", err)
	}
	if err := srv.stop(); err != nil {
		t.Errorf("stop = %v, want nil", err)
	}
	if err := srv.stop(); err != nil {
		t.Errorf("second stop = %v, want nil", err)
	}
	if _, err := readCPU(srv.pids[:1]); err == nil {
		t.Errorf("readCPU after stop = nil error: the server still runs")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name, script, want string
		ctx                context.Context
	}{
		{"exits", `echo "child pid=1 died" ; echo oops >&2; exit 3`, "exited before it was ready: exit status 3\nchild pid=1 died\noops", ctx},
		{"bad line", `echo "ready children=1,x"; exec sleep 60`, `bad ready line "ready children=1,x"`, ctx},
		{"cancelled", `exec sleep 60`, "context canceled", cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := startE2EServer(tc.ctx, "/bin/sh", []string{"-c", tc.script})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("startE2EServer = %+v, %v; want an error containing %q", srv, err, tc.want)
			}
		})
	}
}

// TestOnlyE2EWantsResults: -only e2e merges into the results of an earlier
// run, and fails, measuring nothing and writing nothing, without them.
func TestOnlyE2EWantsResults(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "RESULTS.md")
	var out, errb bytes.Buffer
	code := run([]string{"-only", "e2e", "-data", filepath.Join(dir, "none.json"), "-out", page}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "none.json") {
		t.Errorf("run(-only e2e) without results = %d, stderr %q; want 1 and the missing file", code, errb.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}

// TestWriteScript: wrk's script names e2eClients distinct addresses,
// without ports, each quoted once.
func TestWriteScript(t *testing.T) {
	path, err := writeScript(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list := regexp.MustCompile(`local addrs = \{(.*)\}`).FindSubmatch(b)
	if list == nil {
		t.Fatalf("no addrs table in:\n%s", b)
	}
	seen := map[string]bool{}
	for _, q := range strings.Split(string(list[1]), ", ") {
		a, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("entry %s: %v", q, err)
		}
		if _, err := netip.ParseAddr(a); err != nil {
			t.Errorf("entry %q is no bare address: %v", a, err)
		}
		seen[a] = true
	}
	if len(seen) != e2eClients {
		t.Errorf("%d distinct addresses, want %d", len(seen), e2eClients)
	}
}
