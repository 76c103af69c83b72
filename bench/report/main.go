// Command report runs shmzone's benchmark suite and rewrites
// bench/RESULTS.md from what it measured: `make bench` runs it.
//
// It runs, in order, each reporting progress on stderr:
//
//   - the Go benchmarks of dict, counter, limiter, limiter/redistier and
//     the middleware of net/http (limiter/httplimit), contrib/fasthttp and
//     contrib/fiber (`go test -bench`, -count runs each,
//     medians), among them dict's and limiter's one- and two-process
//     benchmarks on random client keys, and dict's density test;
//   - the `worker bench` matrix: incr, get, set, req and count on the zone,
//     Redis (a redis-server it starts on loopback, when one is installed),
//     flock and mutex backends at -procs 1,2 and 1,000 keys, incr/get/set
//     again at 100,000 keys, the counter and tiered rows, and the zone's
//     incr, req and count with each process on its own random keys
//     (-keyset own), each row -reps times (medians);
//   - the scaling chart (bench/scaling.svg), opened in headless Chromium when
//     one is installed to show that a browser draws it;
//   - bench/peers/nginx.sh: nginx's lua_shared_dict against the dict, and
//     lua-resty-limit-traffic's resty.limit.req and resty.limit.count
//     against limiter's Req and Count, and Req's flood of rejections on 4
//     keys every process shares, at one and two processes. It runs
//     when nginx and its lua module are installed; make bench installs
//     them (make bench-deps). The Lua sources come from REF, as nginx.sh
//     says, and the run fails at its start if they are missing;
//   - the end-to-end section: contrib/fleet's e2eserver, a prefork server
//     with two children, for net/http, fasthttp and fiber, with no limiter,
//     with the limiter middleware with and without its headers, and under
//     a 429 flood, each loaded by wrk for -e2e-duration, -e2e-rounds times
//     in alternation (medians of each round's ratios). It runs when wrk is
//     installed; make bench installs it (make bench-deps).
//
// The raw figures go to bench/results.json and the page to bench/RESULTS.md.
// Both files are replaced only when every step has run: a failed run leaves
// the previous results in place. -from re-renders the page from a results
// file without measuring anything. -only e2e measures the end-to-end
// section alone, with the middleware benchmarks of net/http, fasthttp and
// fiber, into the results file of an earlier run, and re-renders the page.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the command line.
type config struct {
	root     string // the module's root directory
	out      string // the page to write
	data     string // the raw results to write
	chart    string // the chart to write
	from     string // re-render from this results file instead of measuring
	count    int
	btime    string
	reps     int
	duration time.Duration
	procs    string
	density  int
	nginx    bool
	// only is "" to measure everything, or "e2e" for the end-to-end
	// section alone.
	only string
	// e2eRounds and e2eDuration are the end-to-end section's rounds and
	// the length of each of its runs.
	e2eRounds   int
	e2eDuration time.Duration
	// zones is the directory in which a run makes its TMPDIR, "" to keep
	// the process's.
	zones string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: go run ./bench/report [flags]

Report runs the benchmark suite: the Go benchmarks, the worker bench
matrix, the scaling chart, nginx's lua_shared_dict and
lua-resty-limit-traffic when nginx is installed, and prefork servers under
wrk when wrk is installed. It rewrites
bench/RESULTS.md and bench/results.json from the figures. It takes minutes
(the page says how long the run it shows took); the files change only if
every step ran. -only e2e measures the end-to-end section alone, into the
results of an earlier run.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.root, "root", ".", "the shmzone module's root directory")
	fs.StringVar(&c.out, "out", "bench/RESULTS.md", "the results page to write, relative to -root")
	fs.StringVar(&c.data, "data", "bench/results.json", "the raw results to write (or read with -from), relative to -root")
	fs.StringVar(&c.chart, "chart", "bench/scaling.svg", "the scaling chart to write, relative to -root")
	fs.StringVar(&c.from, "from", "", "render -out from this results file instead of measuring")
	fs.IntVar(&c.count, "count", 5, "go test -count: runs of each Go benchmark (the page shows medians)")
	fs.StringVar(&c.btime, "benchtime", "", "go test -benchtime of every Go benchmark (default: go test's 1s, and 2s for the Redis latencies)")
	fs.IntVar(&c.reps, "reps", 3, "runs of each worker bench row (the page shows medians)")
	fs.DurationVar(&c.duration, "duration", 2*time.Second, "worker bench -duration of each run")
	fs.StringVar(&c.procs, "procs", "1,2", "worker bench -procs of the matrix")
	fs.IntVar(&c.density, "density", 10, "runs of dict's density test")
	fs.BoolVar(&c.nginx, "nginx", true, "measure nginx's lua_shared_dict, resty.limit.req and resty.limit.count when nginx and its lua module are installed")
	fs.StringVar(&c.only, "only", "", "measure only this section, into the -data of an earlier run, and re-render the page: e2e")
	fs.IntVar(&c.e2eRounds, "e2e-rounds", 5, "rounds of the end-to-end section: each runs every server configuration once (the page shows medians)")
	fs.DurationVar(&c.e2eDuration, "e2e-duration", 3*time.Second, "wrk's -d of each end-to-end run, in whole seconds")
	fs.StringVar(&c.zones, "zones", "/dev/shm", "the directory in which to make the TMPDIR of every command the run starts, which holds their zone files: servers keep zones in /dev/shm, a tmpfs; \"\" keeps TMPDIR")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.count < 1:
		return c, fmt.Errorf("-count %d: want at least 1", c.count)
	case c.reps < 1:
		return c, fmt.Errorf("-reps %d: want at least 1", c.reps)
	case c.duration < 100*time.Millisecond:
		return c, fmt.Errorf("-duration %v: want at least 100ms", c.duration)
	case c.density < 1:
		return c, fmt.Errorf("-density %d: want at least 1", c.density)
	case c.only != "" && c.only != "e2e":
		return c, fmt.Errorf("-only %q: want e2e", c.only)
	case c.only != "" && c.from != "":
		return c, fmt.Errorf("-only and -from: choose one")
	case c.e2eRounds < 1:
		return c, fmt.Errorf("-e2e-rounds %d: want at least 1", c.e2eRounds)
	case c.e2eDuration < time.Second || c.e2eDuration%time.Second != 0:
		return c, fmt.Errorf("-e2e-duration %v: want whole seconds, at least 1s", c.e2eDuration)
	}
	if _, err := parseProcs(c.procs); err != nil {
		return c, err
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 2
	}
	path := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(c.root, p)
	}
	var res *results
	if c.from != "" {
		res, err = readResults(c.from)
	} else {
		if c.zones != "" {
			done, err := zonesTMPDIR(c.zones)
			if err != nil {
				fmt.Fprintf(stderr, "report: -zones %s: %v\n", c.zones, err)
				return 1
			}
			defer done()
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		m := newMeasurer(c, execRunner, newProgress(stderr, time.Now))
		if c.only == "e2e" {
			res, err = readResults(path(c.data))
			if err == nil {
				err = m.measureE2E(ctx, res)
			}
		} else {
			res, err = m.measure(ctx, path(c.chart))
		}
		if err == nil {
			err = writeFileAtomic(path(c.data), marshalResults(res))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	page, err := render(res)
	if err == nil {
		err = writeFileAtomic(path(c.out), page)
	}
	if err != nil {
		fmt.Fprintf(stderr, "report: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: wrote %s\n", path(c.out))
	return 0
}

// zonesTMPDIR makes a directory in dir and sets TMPDIR to it, so that the
// commands the run starts, and their benchmarks' zone files, use it. It
// returns what removes it and sets TMPDIR back.
func zonesTMPDIR(dir string) (func(), error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("not a directory")
	}
	tmp, err := os.MkdirTemp(dir, "shmzone-bench-")
	if err != nil {
		return nil, err
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(tmp)
	}, nil
}

func readResults(p string) (*results, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &r, nil
}

func marshalResults(r *results) []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err) // results holds only plain data
	}
	return append(b, '\n')
}

// writeFileAtomic replaces p with b by a rename, so that a reader or a
// failed write never sees half a file.
func writeFileAtomic(p string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}
