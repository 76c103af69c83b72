package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// results is everything one run measured: what results.json holds and what
// the page is rendered from.
type results struct {
	Date     string        `json:"date"` // UTC day the run started, 2006-01-02
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Settings settings      `json:"settings"`
	Machine  machine       `json:"machine"`
	// Go holds each `go test -bench` step by id (see goSteps).
	Go      map[string]goStep `json:"go"`
	Density densityStep       `json:"density"`
	// Matrix holds the worker bench runs, in the order they ran.
	Matrix []matrixRun `json:"matrix"`
	Chart  chartStep   `json:"chart"`
	Nginx  *nginxStep  `json:"nginx,omitempty"`
	E2E    *e2eStep    `json:"e2e,omitempty"`
	// Missing says, a line each, what could not be measured and why.
	Missing []string `json:"missing,omitempty"`
}

type settings struct {
	Count    int    `json:"count"`
	Reps     int    `json:"reps"`
	Duration string `json:"duration"`
	Procs    string `json:"procs"`
	Density  int    `json:"density_runs"`
	// Benchtime is go test's -benchtime, "" for its default.
	Benchtime string `json:"benchtime,omitempty"`
	// Zones is the directory in which the run made its TMPDIR, which holds
	// every zone file; "" for the system's temporary directory.
	Zones string `json:"zones,omitempty"`
}

type goStep struct {
	Command string  `json:"command"`
	Samples samples `json:"samples"`
}

type densityStep struct {
	Command  string `json:"command"`
	Counters []int  `json:"counters"`
}

// runner runs a command in dir with extra environment and returns its
// standard output; on failure the error carries the end of its stderr.
type runner func(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error)

func execRunner(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = "…" + tail[len(tail)-2000:]
		}
		return out, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail)
	}
	return out, nil
}

// measurer runs the steps of one report.
type measurer struct {
	c    config
	run  runner
	prog *progress
	// look finds a program on PATH; tests replace it.
	look func(string) (string, error)
	// tmp holds the run's binaries, zones and servers; worker is the
	// worker binary built in it.
	tmp, worker string
	// serve starts an e2eserver and cpu reads its processes' CPU time;
	// tests replace them.
	serve func(ctx context.Context, bin string, args []string) (*e2eServer, error)
	cpu   func(pids []int) (time.Duration, error)
}

func newMeasurer(c config, run runner, prog *progress) *measurer {
	return &measurer{c: c, run: run, prog: prog, look: exec.LookPath, serve: startE2EServer, cpu: readCPU}
}

// goSteps are the Go benchmark runs, by id, with their package and flags.
// dir is the module the step runs in, relative to the root: "" for shmzone
// itself, or a contrib module, which is its own Go module. The steps of
// the middleware, marked e2e, run again with the end-to-end section when
// `-only e2e` measures it alone.
var goSteps = []goSpec{
	{id: "dict-ops", pkg: "./dict", bench: "BenchmarkOps|BenchmarkHashKey|BenchmarkCoarseNow"},
	{id: "dict-procs", pkg: "./dict", bench: "BenchmarkProcs"},
	{id: "counter", pkg: "./counter", bench: "BenchmarkCounter"},
	{id: "limiter", pkg: "./limiter", bench: "BenchmarkLimiter|BenchmarkFlood"},
	{id: "redistier", pkg: "./limiter/redistier", bench: "BenchmarkDecision|BenchmarkTieredFlush", extra: []string{"-benchtime", "2s"}, needsRedis: true},
	{id: "fiber", dir: "contrib/fiber", pkg: ".", bench: "BenchmarkMiddleware", e2e: true},
	{id: "fasthttp", dir: "contrib/fasthttp", pkg: ".", bench: "BenchmarkMiddleware", e2e: true},
	{id: "httplimit", pkg: "./limiter/httplimit", bench: "BenchmarkMiddleware", e2e: true},
	{id: "keyhash", dir: "contrib/xxh3cmp", pkg: ".", bench: "BenchmarkHash"},
	// dict's and limiter's benchmarks again in 10, 64 and 256 MiB zones
	// (zonesize.go).
	{id: "dict-zones", pkg: "./dict", bench: "BenchmarkZoneSize"},
	{id: "limiter-zones", pkg: "./limiter", bench: "BenchmarkZoneSize"},
}

// goSpec is a Go benchmark step: its id in results.Go, its module's
// directory, package and -bench pattern, and its extra flags.
type goSpec struct {
	id, dir, pkg, bench string
	extra               []string
	needsRedis, e2e     bool
}

func (m *measurer) measure(ctx context.Context, chartPath string) (*results, error) {
	start := m.prog.now()
	res := &results{
		Date:    start.UTC().Format("2006-01-02"),
		Started: start.UTC().Truncate(time.Second),
		Settings: settings{
			Count: m.c.count, Reps: m.c.reps, Duration: m.c.duration.String(),
			Procs: m.c.procs, Density: m.c.density, Benchtime: m.c.btime, Zones: m.c.zones,
		},
		Go: map[string]goStep{},
	}
	res.Machine = m.machine(ctx)
	_, redisErr := m.look("redis-server")
	// The Go benchmarks, the density test, the worker build, the matrix,
	// the chart, its rendering, nginx and the end-to-end section.
	m.prog.plan(len(goSteps) + 2 + len(matrixPlan(redisErr == nil))*m.c.reps + 3 + m.e2eSteps())
	if m.nginxSkip() == "" {
		if _, err := limitTrafficRef(m.c.root, os.Getenv); err != nil {
			return nil, err
		}
	}
	tmp, cleanup, err := tempDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	m.tmp = tmp

	for _, g := range goSteps {
		if err := m.goStep(ctx, res, g, redisErr); err != nil {
			return nil, err
		}
	}

	dargs := []string{"test", "-count", strconv.Itoa(m.c.density), "-run", "^TestDensity$", "-v", "./dict"}
	res.Density.Command = "go " + shellJoin(dargs)
	m.prog.step(res.Density.Command)
	out, err := m.run(ctx, m.c.root, nil, "go", dargs...)
	if err != nil {
		return nil, err
	}
	res.Density.Counters = parseDensity(out)
	if len(res.Density.Counters) != m.c.density {
		return nil, fmt.Errorf("%s: found %d density results, want %d", res.Density.Command, len(res.Density.Counters), m.c.density)
	}

	m.worker = filepath.Join(tmp, "worker")
	m.prog.step("go build ./cmd/worker")
	if _, err := m.run(ctx, m.c.root, nil, "go", "build", "-o", m.worker, "./cmd/worker"); err != nil {
		return nil, err
	}
	if err := m.matrix(ctx, res, redisErr == nil); err != nil {
		return nil, err
	}
	if err := m.chart(ctx, res); err != nil {
		return nil, err
	}
	if err := m.nginx(ctx, res); err != nil {
		return nil, err
	}
	if err := m.e2e(ctx, res); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(chartPath, []byte(res.Chart.SVG)); err != nil {
		return nil, err
	}
	res.Elapsed = m.prog.now().Sub(start).Round(time.Second)
	m.prog.done()
	return res, nil
}

// goStep runs one Go benchmark step into res.Go.
func (m *measurer) goStep(ctx context.Context, res *results, s goSpec, redisErr error) error {
	args := []string{"test", "-run", "^$", "-bench", s.bench, "-benchmem", "-count", strconv.Itoa(m.c.count)}
	if m.c.btime != "" {
		args = append(args, "-benchtime", m.c.btime)
	} else {
		args = append(args, s.extra...)
	}
	args = append(args, s.pkg)
	cmd := "go " + shellJoin(args)
	if s.dir != "" {
		cmd = "cd " + s.dir + " && " + cmd
	}
	if s.needsRedis && redisErr != nil {
		m.prog.skip(cmd, "redis-server not installed")
		res.Missing = append(res.Missing, "limiter/redistier benchmarks: redis-server is not installed")
		return nil
	}
	m.prog.step(cmd)
	out, err := m.run(ctx, filepath.Join(m.c.root, s.dir), nil, "go", args...)
	if err != nil {
		return err
	}
	smp, err := parseBench(out)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if len(smp) == 0 {
		return fmt.Errorf("%s: no benchmark results in its output", cmd)
	}
	res.Go[s.id] = goStep{Command: cmd, Samples: smp}
	return nil
}

// measureE2E measures the end-to-end section alone, with the middleware
// benchmarks, into res, the results of an earlier run. The rest of res
// stays as it was, but for the lines of Missing that this section writes,
// which it replaces.
func (m *measurer) measureE2E(ctx context.Context, res *results) error {
	if res.Go == nil {
		res.Go = map[string]goStep{}
	}
	var e2eSpecs []goSpec
	for _, g := range goSteps {
		if g.e2e {
			e2eSpecs = append(e2eSpecs, g)
		}
	}
	if why := m.e2eSkip(); why != "" {
		return fmt.Errorf("-only e2e: %s", why)
	}
	m.prog.plan(len(e2eSpecs) + m.e2eSteps())
	tmp, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	m.tmp = tmp
	for _, g := range e2eSpecs {
		if err := m.goStep(ctx, res, g, nil); err != nil {
			return err
		}
	}
	res.Missing = slices.DeleteFunc(res.Missing, func(s string) bool { return strings.HasPrefix(s, e2eWhat+":") })
	if err := m.e2e(ctx, res); err != nil {
		return err
	}
	if res.E2E != nil {
		res.E2E.Apart = true
	}
	m.prog.done()
	return nil
}

// tempDir makes a directory for the run's binaries, zones and servers.
func tempDir() (string, func(), error) {
	d, err := os.MkdirTemp("", "shmzone-report-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// shellJoin quotes args for a shell where they need it, for the commands the
// page shows.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t|$^*?()[]{}'\"\\;&<>") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// decodeJSON decodes the single JSON value of out into v.
func decodeJSON(out []byte, v any, what string) error {
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("%s: bad JSON output: %w", what, err)
	}
	return nil
}

// abs makes p absolute against the module root.
func (m *measurer) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.c.root, p)
}
