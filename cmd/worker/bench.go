package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// benchFlags are worker bench's parsed flags.
type benchFlags struct {
	cfg   benchConfig
	procs []int
	json  bool
	chart string
}

func parseBenchFlags(args []string, stderr io.Writer) (benchFlags, error) {
	var f benchFlags
	fs := flag.NewFlagSet("worker bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	procs := fs.String("procs", "1,2", "comma-separated process counts to run, one row each, such as 1,2,4")
	fs.StringVar(&f.cfg.Op, "op", "incr", "operation: "+strings.Join(benchOps, ", "))
	fs.IntVar(&f.cfg.Keys, "keys", 1000, "number of distinct keys the op picks from at random, in each process with -keyset own")
	fs.StringVar(&f.cfg.Keyset, "keyset", "shared", "whose keys: shared (every process the same -keys keys, \"bench:0\"…) or own (each process its own -keys client addresses, drawn at random)")
	fs.DurationVar(&f.cfg.Duration, "duration", 2*time.Second, "how long each row runs")
	fs.StringVar(&f.cfg.Backend, "backend", "zone", "what to measure: "+strings.Join(benchBackends, ", "))
	fs.StringVar(&f.cfg.Zone, "zone", "", "zone file for the zone backend (created if absent; its path+\".flock\" for flock); default a file in a temp dir, removed after")
	fs.StringVar(&f.cfg.Redis, "redis", "127.0.0.1:6379", "address of the Redis server for the redis backend")
	fs.BoolVar(&f.json, "json", false, "print the results as JSON instead of a table")
	fs.StringVar(&f.chart, "chart", "", "also write an SVG chart of ops/s by procs to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: worker bench [flags]

Bench runs -op against -backend from each count of processes in -procs (the
processes are this program re-executed), for -duration each, and prints
ops/s (all processes), ns/op (per process), sampled p50/p99/p999 latency of
one op, and scaling: ops/s over one process's ops/s. SIGINT (Ctrl-C) or
SIGTERM stops the processes, removes the default -zone's temp dir and
exits 1.

Backends: zone (shmzone's dict in a zone file), mutex (a map under a
sync.Mutex in each process: one process's ceiling, nothing shared), flock (a
file of counters under flock: the naive shared answer), redis (go-redis, one
client per process), tiered (redistier.Tiered: counts in the zone, one
process flushing to -redis every 100 ms). Ops: incr, get, set on zone, mutex,
flock and redis; req (limiter.Req), count (limiter.Count) on zone and redis;
count on tiered; counter (counter.Counter) on zone.

Keys (-keyset): with shared, every process picks from the same -keys keys,
"bench:0" to "bench:N-1". With own, each process has its own -keys keys,
client addresses such as "203.0.113.7:51234" drawn at random, as a server
sees its clients: no other process uses them, and they fall on any of the
zone's shards. Each process creates its keys before the start (shared
keys: when absent): the zone's entries (for req and count by one decision
per key), Redis's keys for incr, get and set, the flock file's slots (with
own, process i's slots follow process i-1's). With own on the zone, the
processes of a row create their keys in turns, in the order their clients
would arrive at a server, mixed in time, as a server's processes create
the entries of the clients they serve. Then each op picks one of them at
random.

Flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(*procs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 256 {
			return f, fmt.Errorf("bad -procs %q: want process counts from 1 to 256, such as 1,2,4", *procs)
		}
		f.procs = append(f.procs, n)
	}
	ops, ok := backendOps[f.cfg.Backend]
	switch {
	case !ok:
		return f, fmt.Errorf("unknown -backend %q: want one of %s", f.cfg.Backend, strings.Join(benchBackends, ", "))
	case !slices.Contains(benchOps, f.cfg.Op):
		return f, fmt.Errorf("unknown -op %q: want one of %s", f.cfg.Op, strings.Join(benchOps, ", "))
	case !slices.Contains(benchKeysets, f.cfg.Keyset):
		return f, fmt.Errorf("unknown -keyset %q: want one of %s", f.cfg.Keyset, strings.Join(benchKeysets, ", "))
	case !slices.Contains(ops, f.cfg.Op):
		return f, fmt.Errorf("-backend %s does not run -op %s: it runs %s", f.cfg.Backend, f.cfg.Op, strings.Join(ops, ", "))
	case f.cfg.Keys < 1 || f.cfg.Keys > 10_000_000:
		return f, fmt.Errorf("bad -keys %d: want 1 to 10000000", f.cfg.Keys)
	case f.cfg.Duration <= 0:
		return f, fmt.Errorf("bad -duration %v: want a positive duration such as 2s", f.cfg.Duration)
	}
	return f, nil
}

func benchMain(args []string, stdout, stderr io.Writer) int {
	f, err := parseBenchFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker bench:", err)
		return 2
	}
	// SIGINT or SIGTERM stops the children and removes the temp zone
	// (runBench's defers) before exiting, instead of killing this process
	// at once and leaving them behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rep, err := runBench(ctx, f, stderr)
	stop()
	if err != nil {
		fmt.Fprintln(stderr, "worker bench:", err)
		return 1
	}
	if f.json {
		err = writeJSON(stdout, rep)
	} else {
		err = writeTable(stdout, rep)
	}
	if err == nil && f.chart != "" {
		err = writeChartFile(f.chart, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker bench:", err)
		return 1
	}
	return 0
}

// runBench runs one row per procs value and returns the report. When ctx
// is done it kills the children, cleans up and returns errInterrupted.
func runBench(ctx context.Context, f benchFlags, stderr io.Writer) (report, error) {
	cfg := f.cfg
	rep := report{Backend: cfg.Backend, Op: cfg.Op, Keys: cfg.Keys, Keyset: cfg.Keyset, Duration: cfg.Duration.String()}
	if cfg.Zone == "" {
		dir, err := os.MkdirTemp("", "worker-bench-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
		cfg.Zone = filepath.Join(dir, "bench.zone")
	}
	cfg.Seed = rand.Uint64()
	if cfg.Backend == "zone" || cfg.Backend == "tiered" {
		// Create the zone once so that the children all attach to it.
		d, err := dict.Open(cfg.Zone, dict.Options{Size: zoneSize})
		if err != nil {
			return rep, err
		}
		if err := d.Close(); err != nil {
			return rep, err
		}
		defer os.Remove(turnsPath(cfg))
	}
	exe, err := os.Executable()
	if err != nil {
		return rep, err
	}
	p := newProgress(stderr)
	for _, n := range f.procs {
		cfg.Procs = n
		r, err := runRow(ctx, exe, cfg, p)
		if ctx.Err() != nil {
			// The children died of it; their errors say nothing more.
			p.done()
			return rep, errInterrupted
		}
		if err != nil {
			return rep, fmt.Errorf("procs=%d: %w", n, err)
		}
		rep.Rows = append(rep.Rows, r)
	}
	p.done()
	scale(rep.Rows)
	return rep, nil
}

// child is one running bench process as the parent sees it.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	ops    atomic.Int64
	result childResult
	stderr strings.Builder
}

// errInterrupted is runBench's error when its context ended it (a signal).
var errInterrupted = errors.New("interrupted")

// runRow runs the cfg.Procs processes of one row and gathers their results.
// When ctx is done the children are killed.
func runRow(ctx context.Context, exe string, cfg benchConfig, p *progress) (row, error) {
	n := cfg.Procs
	conf, err := json.Marshal(cfg)
	if err != nil {
		return row{}, err
	}
	if cfg.Backend == "zone" && cfg.Keyset == "own" {
		// The row's processes take turns from 0 (clients.CreateInTurns).
		if err := os.WriteFile(turnsPath(cfg), make([]byte, 8), 0o600); err != nil {
			return row{}, err
		}
	}
	cs := make([]*child, n)
	defer func() {
		for _, c := range cs {
			if c != nil && c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	for i := range cs {
		c := &child{cmd: exec.CommandContext(ctx, exe)}
		c.cmd.Env = append(os.Environ(), childEnv+"=bench", benchConfigEnv+"="+string(conf), benchIDEnv+"="+strconv.Itoa(i))
		c.cmd.Stderr = &c.stderr
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			return row{}, err
		}
		out, err := c.cmd.StdoutPipe()
		if err != nil {
			return row{}, err
		}
		c.lines = bufio.NewScanner(out)
		c.lines.Buffer(make([]byte, 64<<10), 16<<20)
		if err := c.cmd.Start(); err != nil {
			return row{}, err
		}
		cs[i] = c
	}
	for _, c := range cs {
		if !c.lines.Scan() || c.lines.Text() != "ready" {
			c.cmd.Wait()
			return row{}, fmt.Errorf("a child did not start: %s", strings.TrimSpace(c.stderr.String()))
		}
	}
	for _, c := range cs {
		fmt.Fprintln(c.stdin, "go")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.read()
		}()
	}
	stop := p.row(cfg, n, cs)
	wg.Wait()
	stop()
	rs := make([]childResult, n)
	for i, c := range cs {
		if errs[i] != nil {
			return row{}, errs[i]
		}
		rs[i] = c.result
	}
	return aggregate(n, rs), nil
}

// read follows a child's output to its result and waits for it to exit.
func (c *child) read() error {
	got := false
	for c.lines.Scan() {
		line := c.lines.Text()
		if s, ok := strings.CutPrefix(line, "progress "); ok {
			n, _ := strconv.ParseInt(s, 10, 64)
			c.ops.Store(n)
		} else if s, ok := strings.CutPrefix(line, "result "); ok {
			if err := json.Unmarshal([]byte(s), &c.result); err != nil {
				return fmt.Errorf("a child's result: %w", err)
			}
			c.ops.Store(c.result.Ops)
			got = true
		}
	}
	c.stdin.Close()
	err := c.cmd.Wait()
	if err != nil || !got {
		return fmt.Errorf("a child failed (%v): %s", err, strings.TrimSpace(c.stderr.String()))
	}
	return nil
}
