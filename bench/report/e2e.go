package main

// e2e.go: the end-to-end section. contrib/fleet's e2eserver runs under
// package prefork with two children, for each framework, with no limiter,
// with the limiter and its headers, with the limiter without headers,
// under a 429 flood, and with the middleware and its headers over a
// limiter that decides nothing (static). wrk loads each server, and the run reads the
// server's CPU time from /proc before and after.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shmzone/shmzone/internal/clients"
)

// e2eStep is what the end-to-end section measured.
type e2eStep struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Apart is set when `-only e2e` measured the section after the rest
	// of the page.
	Apart bool `json:"apart,omitempty"`
	// Build builds the server; Server is its command line, and Wrk the
	// load's. FRAMEWORK and FLAGS stand for a configuration's, and ZONE
	// and PORT for what changes from run to run.
	Build  string `json:"build"`
	Server string `json:"server"`
	Wrk    string `json:"wrk"`
	Rounds int    `json:"rounds"`
	// Duration is wrk's -d, the length of each run.
	Duration string `json:"duration"`
	// Runs are in the order they ran.
	Runs []e2eRun `json:"runs"`
}

// e2eRun is one server under one wrk run.
type e2eRun struct {
	Round     int    `json:"round"`
	Framework string `json:"framework"`
	Config    string `json:"config"`
	// Requests is the responses wrk counted, and Rejected those that were
	// not 2xx or 3xx.
	Requests  int64   `json:"requests"`
	Rejected  int64   `json:"rejected"`
	ReqPerSec float64 `json:"req_per_sec"`
	// SocketErrors is the sum of wrk's connect, read, write and timeout
	// errors.
	SocketErrors int64 `json:"socket_errors,omitempty"`
	// CPU is the user and system time of the master and its children
	// during the run.
	CPU time.Duration `json:"cpu_ns"`
}

// cpuPerRequest is the server's CPU time per response, in µs.
func (r e2eRun) cpuPerRequest() float64 {
	if r.Requests <= 0 {
		return 0
	}
	return r.CPU.Seconds() * 1e6 / float64(r.Requests)
}

// e2eFrameworks are e2eserver's -framework values, in the page's order,
// and the names the page gives them.
var e2eFrameworks = []struct{ id, name string }{
	{"nethttp", "net/http"},
	{"fasthttp", "fasthttp"},
	{"fiber", "fiber"},
}

// hugeLimit is a limit a minute that no run reaches: 2^40 requests.
const hugeLimit = 1 << 40

// e2eConfigs are the configurations of each framework's server, the
// baseline first, with e2eserver's flags.
var e2eConfigs = []struct {
	id, name string
	args     []string
}{
	{"none", "no limiter", []string{"-limiter", "none"}},
	{"headers", "limiter, headers", []string{"-limiter", "count", "-limit", strconv.Itoa(hugeLimit)}},
	{"noheaders", "limiter, no headers", []string{"-limiter", "count", "-limit", strconv.Itoa(hugeLimit), "-headers=false"}},
	{"flood", "429 flood", []string{"-limiter", "count", "-limit", "1"}},
	{"static", "middleware alone, headers", []string{"-limiter", "static", "-limit", strconv.Itoa(hugeLimit)}},
}

// e2eCase is one server configuration of a round.
type e2eCase struct{ framework, config int }

// e2eOrder is the order of round r: every configuration of every
// framework once. Each framework's runs come together, so that its ratios
// compare runs close in time. The frameworks are rotated by r, and the
// configurations within each by r, so that each takes every place in turn.
func e2eOrder(r int) []e2eCase {
	nf, nc := len(e2eFrameworks), len(e2eConfigs)
	var cs []e2eCase
	for i := range nf {
		for j := range nc {
			cs = append(cs, e2eCase{framework: (i + r) % nf, config: (j + r) % nc})
		}
	}
	return cs
}

// wrk's settings: threads and connections.
const (
	wrkThreads = 2
	wrkConns   = 64
)

// e2eChildren is e2eserver's -children.
const e2eChildren = 2

// e2eClients is the number of client addresses wrk's requests come from,
// and e2eProxy the proxy e2eserver trusts to name them: wrk itself.
const (
	e2eClients = 1000
	e2eProxy   = "127.0.0.1"
)

// e2eScript is wrk's script, clients.lua. Each request names a client in
// X-Forwarded-For, drawn at random from the addresses.
const e2eScript = `-- clients.lua: each request comes from a client drawn at random.
local addrs = {%s}
local reqs = {}
function init(args)
  for i, a in ipairs(addrs) do
    reqs[i] = wrk.format(nil, nil, {["X-Forwarded-For"] = a})
  end
end
function request()
  return reqs[math.random(#reqs)]
end
`

// writeScript writes wrk's script into dir and returns its path. The
// addresses are clients.Addrs' first e2eClients of seed 1, without their
// ports.
func writeScript(dir string) (string, error) {
	var b strings.Builder
	for i, a := range clients.Addrs(1, 0, e2eClients) {
		if i > 0 {
			b.WriteString(", ")
		}
		host, _, _ := net.SplitHostPort(a)
		b.WriteString(strconv.Quote(host))
	}
	path := filepath.Join(dir, "clients.lua")
	return path, os.WriteFile(path, []byte(fmt.Sprintf(e2eScript, b.String())), 0o644)
}

// e2eSkip says why the end-to-end section does not run, or "" if it does.
func (m *measurer) e2eSkip() string {
	if _, err := m.look("wrk"); err != nil {
		return "wrk is not installed (make bench-deps)"
	}
	return ""
}

// e2eSteps is the number of progress steps of the section.
func (m *measurer) e2eSteps() int {
	if m.e2eSkip() != "" {
		return 1
	}
	return 1 + m.c.e2eRounds*len(e2eFrameworks)*len(e2eConfigs)
}

// e2eWhat is what the section measures, for the lines that say it was not
// measured.
const e2eWhat = "end-to-end prefork servers under wrk"

func (m *measurer) e2e(ctx context.Context, res *results) error {
	const build = "cd contrib/fleet && go build ./cmd/e2eserver"
	if why := m.e2eSkip(); why != "" {
		m.prog.skip(build, why)
		res.Missing = append(res.Missing, e2eWhat+": "+why)
		return nil
	}
	start := m.prog.now()
	dur := m.c.e2eDuration
	step := &e2eStep{
		Started:  start.UTC().Truncate(time.Second),
		Build:    build,
		Rounds:   m.c.e2eRounds,
		Duration: dur.String(),
		Server:   "e2eserver -framework FRAMEWORK FLAGS -zone ZONE -addr 127.0.0.1:PORT -children " + strconv.Itoa(e2eChildren) + " -proxy " + e2eProxy,
		Wrk:      shellJoin(wrkArgs("PORT", dur, "clients.lua")),
	}
	script, err := writeScript(m.tmp)
	if err != nil {
		return err
	}
	defer os.Remove(script)
	bin := filepath.Join(m.tmp, "e2eserver")
	m.prog.step(build)
	if _, err := m.run(ctx, filepath.Join(m.c.root, "contrib", "fleet"), nil, "go", "build", "-o", bin, "./cmd/e2eserver"); err != nil {
		return err
	}
	zone := filepath.Join(m.tmp, "e2e.zone")
	for r := range m.c.e2eRounds {
		for _, c := range e2eOrder(r) {
			run, err := m.e2eRun(ctx, bin, script, zone, r, c)
			if err != nil {
				return err
			}
			step.Runs = append(step.Runs, run)
		}
	}
	step.Elapsed = m.prog.now().Sub(start).Round(time.Second)
	res.E2E = step
	return nil
}

// wrkArgs are wrk's arguments against a port, with a script.
func wrkArgs(port string, d time.Duration, script string) []string {
	return []string{"-t" + strconv.Itoa(wrkThreads), "-c" + strconv.Itoa(wrkConns), "-d" + wrkDuration(d),
		"-s", script, "http://127.0.0.1:" + port + "/"}
}

// wrkDuration writes d as wrk reads it: whole seconds.
func wrkDuration(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) + "s"
}

// e2eRun starts the server of case c on a fresh zone, loads it with wrk,
// and stops it.
func (m *measurer) e2eRun(ctx context.Context, bin, script, zone string, round int, c e2eCase) (e2eRun, error) {
	fw, cfg := e2eFrameworks[c.framework], e2eConfigs[c.config]
	run := e2eRun{Round: round, Framework: fw.id, Config: cfg.id}
	port, err := freePort()
	if err != nil {
		return run, err
	}
	args := append([]string{"-framework", fw.id}, cfg.args...)
	args = append(args, "-zone", zone, "-addr", net.JoinHostPort("127.0.0.1", port), "-children", strconv.Itoa(e2eChildren), "-proxy", e2eProxy)
	what := fmt.Sprintf("wrk: %s, %s (round %d of %d)", fw.name, cfg.name, round+1, m.c.e2eRounds)
	m.prog.step(what)
	// A zone of an earlier run would hold its counts.
	if err := os.Remove(zone); err != nil && !os.IsNotExist(err) {
		return run, err
	}
	defer os.Remove(zone)
	srv, err := m.serve(ctx, bin, args)
	if err != nil {
		return run, fmt.Errorf("e2eserver %s: %w", shellJoin(args), err)
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.stop()
		}
	}()
	before, err := m.cpu(srv.pids)
	if err != nil {
		return run, err
	}
	out, err := m.run(ctx, m.c.root, nil, "wrk", wrkArgs(port, m.c.e2eDuration, script)...)
	if err != nil {
		return run, err
	}
	after, err := m.cpu(srv.pids)
	if err != nil {
		return run, fmt.Errorf("%s: %w (did a child die?)", what, err)
	}
	stopped = true
	if err := srv.stop(); err != nil {
		return run, fmt.Errorf("e2eserver %s: %w", shellJoin(args), err)
	}
	w, err := parseWrk(out)
	if err != nil {
		return run, fmt.Errorf("%s: %w", what, err)
	}
	run.Requests, run.Rejected, run.ReqPerSec, run.SocketErrors = w.requests, w.non2xx, w.reqPerSec, w.socketErrors
	run.CPU = after - before
	if err := checkRejected(run, m.c.e2eDuration); err != nil {
		return run, fmt.Errorf("%s: %w", what, err)
	}
	return run, nil
}

// checkRejected checks that a run rejected what its configuration must:
// nothing under a limit no client reaches, and, under a 429 flood, every
// request but each client's first of each minute's window.
func checkRejected(r e2eRun, d time.Duration) error {
	if r.Config != "flood" {
		if r.Rejected != 0 {
			return fmt.Errorf("%d of %d responses were not 2xx or 3xx, want none", r.Rejected, r.Requests)
		}
		return nil
	}
	// A run of d spans at most d/minute+1 windows of each client, whose
	// first requests pass, one in each.
	windows := (int64(d/time.Minute) + 2) * e2eClients
	if allowed := r.Requests - r.Rejected; allowed > windows {
		return fmt.Errorf("%d of %d responses were 2xx or 3xx under a limit of 1 a minute, want at most %d", allowed, r.Requests, windows)
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago. prefork
// needs a fixed port: it refuses port 0.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
