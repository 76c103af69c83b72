package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// matrixRun is one row group of the matrix: a backend and op at a key
// count and keyset, with one row per procs value, each the median of the
// repetitions.
type matrixRun struct {
	Backend string `json:"backend"`
	Op      string `json:"op"`
	Keys    int    `json:"keys"`
	// Keyset is worker bench's -keyset: "" for its default, shared (every
	// process the same keys), "own" for each process its own keys.
	Keyset  string      `json:"keyset,omitempty"`
	Command string      `json:"command"`
	Rows    []matrixRow `json:"rows"`
}

type matrixRow struct {
	Procs     int       `json:"procs"`
	OpsPerSec float64   `json:"ops_per_sec"` // median over the repetitions
	NsPerOp   float64   `json:"ns_per_op"`   // per process
	P50       float64   `json:"p50_ns"`      // medians of each run's percentiles
	P99       float64   `json:"p99_ns"`
	P999      float64   `json:"p999_ns"`
	Runs      []float64 `json:"runs_ops_per_sec"`
}

// workerReport is the part of `worker bench -json` the matrix reads.
type workerReport struct {
	Backend string      `json:"backend"`
	Op      string      `json:"op"`
	Keys    int         `json:"keys"`
	Rows    []workerRow `json:"rows"`
}

type workerRow struct {
	Procs     int     `json:"procs"`
	OpsPerSec float64 `json:"ops_per_sec"`
	NsPerOp   float64 `json:"ns_per_op"`
	P50       float64 `json:"p50_ns"`
	P99       float64 `json:"p99_ns"`
	P999      float64 `json:"p999_ns"`
}

type planned struct {
	backend, op string
	keys        int
	keyset      string // "" for worker bench's default
}

// ownOps are the zone ops the matrix runs again with -keyset own, each
// process on its own 1,000 keys: the writes that need not touch another
// process's keys. get reads the keys all processes share in its plain row.
var ownOps = []string{"incr", "req", "count"}

// matrixPlan lists the worker bench runs: every op at 1,000 keys on each
// backend that runs it, then the plain ops at 100,000 keys, then the zone's
// ownOps with -keyset own. Redis and tiered runs need a redis-server.
func matrixPlan(withRedis bool) []planned {
	var p []planned
	add := func(keys int, ops []string, backends ...string) {
		for _, op := range ops {
			for _, b := range backends {
				if (b == "redis" || b == "tiered") && !withRedis {
					continue
				}
				p = append(p, planned{backend: b, op: op, keys: keys})
			}
		}
	}
	plain := []string{"incr", "get", "set"}
	add(1000, plain, "zone", "redis", "flock", "mutex")
	add(1000, []string{"req", "count"}, "zone", "redis")
	add(1000, []string{"counter"}, "zone")
	add(1000, []string{"count"}, "tiered")
	add(100000, plain, "zone", "redis", "flock", "mutex")
	for _, op := range ownOps {
		p = append(p, planned{backend: "zone", op: op, keys: 1000, keyset: "own"})
	}
	return p
}

func parseProcs(s string) ([]int, error) {
	var ps []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("-procs %q: want a comma-separated list of counts from 1 to 64", s)
		}
		ps = append(ps, n)
	}
	return ps, nil
}

// matrix builds the worker, starts a redis-server when one is installed,
// and runs matrixPlan.
func (m *measurer) matrix(ctx context.Context, res *results, withRedis bool) error {
	var addr string
	if withRedis {
		var stop func()
		var err error
		addr, stop, err = startRedis(ctx, m.tmp)
		if err != nil {
			return err
		}
		defer stop()
		res.Machine.Redis = redisVersion(ctx, m.run)
	} else {
		res.Missing = append(res.Missing, "worker bench redis and tiered rows: redis-server is not installed")
	}
	for _, p := range matrixPlan(withRedis) {
		args := []string{"bench", "-backend", p.backend, "-op", p.op, "-procs", m.c.procs,
			"-keys", strconv.Itoa(p.keys), "-duration", m.c.duration.String(), "-json"}
		if p.keyset != "" {
			args = append(args, "-keyset", p.keyset)
		}
		shown := args
		if p.backend == "redis" || p.backend == "tiered" {
			shown = append(args[:len(args):len(args)], "-redis", "ADDR")
			args = append(args, "-redis", addr)
		}
		run := matrixRun{Backend: p.backend, Op: p.op, Keys: p.keys, Keyset: p.keyset, Command: "worker " + shellJoin(shown)}
		var reps []workerReport
		for i := 0; i < m.c.reps; i++ {
			m.prog.step(fmt.Sprintf("%s (run %d of %d)", run.Command, i+1, m.c.reps))
			out, err := m.run(ctx, m.c.root, nil, m.worker, args...)
			if err != nil {
				return err
			}
			var wr workerReport
			if err := decodeJSON(out, &wr, run.Command); err != nil {
				return err
			}
			reps = append(reps, wr)
		}
		var err error
		run.Rows, err = medianRows(reps)
		if err != nil {
			return fmt.Errorf("%s: %w", run.Command, err)
		}
		res.Matrix = append(res.Matrix, run)
	}
	return nil
}

// medianRows folds repeated worker reports into one row per procs value.
func medianRows(reps []workerReport) ([]matrixRow, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("no runs")
	}
	var rows []matrixRow
	for i, r0 := range reps[0].Rows {
		row := matrixRow{Procs: r0.Procs}
		var ops, ns, p50, p99, p999 []float64
		for _, rep := range reps {
			if len(rep.Rows) != len(reps[0].Rows) || rep.Rows[i].Procs != r0.Procs {
				return nil, fmt.Errorf("runs disagree on their procs rows")
			}
			r := rep.Rows[i]
			ops = append(ops, r.OpsPerSec)
			ns = append(ns, r.NsPerOp)
			p50, p99, p999 = append(p50, r.P50), append(p99, r.P99), append(p999, r.P999)
		}
		row.OpsPerSec, _ = median(ops)
		row.NsPerOp, _ = median(ns)
		row.P50, _ = median(p50)
		row.P99, _ = median(p99)
		row.P999, _ = median(p999)
		row.Runs = ops
		rows = append(rows, row)
	}
	return rows, nil
}

// startRedis starts a redis-server on a free loopback port with nothing
// persisted, and waits until it answers PING.
func startRedis(ctx context.Context, dir string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("redis-server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(ctx, addr); err == nil {
			return addr, stop, nil
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return "", nil, fmt.Errorf("redis-server on %s exited (%v):\n%s", addr, err, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer PING within 10s", addr)
		}
	}
}

// ping sends PING to the Redis server at addr on a new connection and
// returns nil if it answers +PONG. It is all the report says to Redis
// itself: the worker's redis backend is what talks to it.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

func redisVersion(ctx context.Context, run runner) string {
	out, err := run(ctx, "", nil, "redis-server", "--version")
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return ""
}

// run returns the matrix run of a backend, op and key count at worker
// bench's default keyset, or nil.
func (r *results) run(backend, op string, keys int) *matrixRun {
	return r.runKeyset(backend, op, keys, "")
}

// runKeyset returns the matrix run of a backend, op, key count and keyset
// ("" for the default), or nil.
func (r *results) runKeyset(backend, op string, keys int, keyset string) *matrixRun {
	i := slices.IndexFunc(r.Matrix, func(m matrixRun) bool {
		return m.Backend == backend && m.Op == op && m.Keys == keys && m.Keyset == keyset
	})
	if i < 0 {
		return nil
	}
	return &r.Matrix[i]
}

// row returns the row of a procs value, or nil.
func (m *matrixRun) row(procs int) *matrixRow {
	if m == nil {
		return nil
	}
	for i := range m.Rows {
		if m.Rows[i].Procs == procs {
			return &m.Rows[i]
		}
	}
	return nil
}
