package main

// serve.go: the "worker serve" verb, its flags and its configuration. The
// master is in serve_master.go, the child in serve_child.go.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

func init() {
	register("serve", verb{run: runServe, summary: "prefork HTTP server whose children share one rate limit"})
	registerChild("serve", serveChild)
}

// serveConfigEnv carries a child's configuration, as JSON, from the master.
const serveConfigEnv = "WORKER_SERVE_CONFIG"

// serveConfig is what the master hands each child.
type serveConfig struct {
	Addr       string        `json:"addr"`
	Zone       string        `json:"zone"`
	Rate       float64       `json:"rate"`
	Burst      float64       `json:"burst"`
	NoDelay    bool          `json:"nodelay"`
	PerProcess bool          `json:"per_process"`
	Drain      time.Duration `json:"drain"`
	SlowPath   string        `json:"slow_path,omitempty"`
	Slow       time.Duration `json:"slow,omitempty"`
	MasterPid  int           `json:"master_pid"`

	// The master's own settings, not sent.
	ReadyTimeout time.Duration `json:"-"`
	UnreadyRoll  int           `json:"-"`
}

// serveFlags parses the verb's arguments into the master's settings.
func serveFlags(args []string, stderr io.Writer) (procs int, zoneSize int64, c serveConfig, err error) {
	fs := flag.NewFlagSet("worker serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: worker serve [flags]\n\nA master re-executes itself as -procs children that listen on -addr with\nSO_REUSEPORT and rate limit every request through one shared zone.\nSIGTERM drains and exits; SIGHUP replaces the children one by one.\n\nflags:")
		fs.PrintDefaults()
	}
	fs.IntVar(&procs, "procs", runtime.NumCPU(), "number of child processes")
	fs.StringVar(&c.Addr, "addr", ":8080", "address every child listens on (SO_REUSEPORT)")
	fs.StringVar(&c.Zone, "zone", filepath.Join(os.TempDir(), "worker-serve.zone"), "zone file the children share; created when absent")
	fs.Int64Var(&zoneSize, "zone-size", 4<<20, "size in bytes of a zone created by -zone")
	rate := fs.String("rate", "100r/s", "rate limit per client address, nginx syntax (10r/s, 30r/m)")
	fs.Float64Var(&c.Burst, "burst", 20, "requests over the rate a client may queue (delayed, or let through with -nodelay)")
	fs.BoolVar(&c.NoDelay, "nodelay", false, "let requests within the burst through at once instead of delaying them")
	fs.BoolVar(&c.PerProcess, "per-process", false, "give each child a private zone instead of the shared one (the baseline: N children admit N times the limit)")
	fs.DurationVar(&c.Drain, "drain", 10*time.Second, "how long a child waits for in-flight requests on SIGTERM")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", 10*time.Second, "how long a new child may take to listen; one that takes longer is killed (a roll keeps the old child)")
	fs.StringVar(&c.SlowPath, "slow-path", "", "testing: a path whose response takes -slow")
	fs.DurationVar(&c.Slow, "slow", time.Second, "testing: how long -slow-path takes to answer")
	fs.IntVar(&c.UnreadyRoll, "unready-roll", 0, "testing: the children started by this SIGHUP roll (1 = the first) never listen nor report ready")
	if err = fs.Parse(args); err != nil {
		return 0, 0, c, err
	}
	if fs.NArg() > 0 {
		return 0, 0, c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if procs < 1 {
		return 0, 0, c, errors.New("-procs must be at least 1")
	}
	if c.Rate, err = limiter.ParseRate(*rate); err != nil {
		return 0, 0, c, err
	}
	if c.Burst < 0 {
		return 0, 0, c, errors.New("-burst must not be negative")
	}
	if c.Drain <= 0 {
		return 0, 0, c, errors.New("-drain must be positive")
	}
	if c.ReadyTimeout <= 0 {
		return 0, 0, c, errors.New("-ready-timeout must be positive")
	}
	return procs, zoneSize, c, nil
}

func runServe(args []string, stdout, stderr io.Writer) int {
	procs, zoneSize, c, err := serveFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker serve:", err)
		return 2
	}
	if !c.PerProcess {
		// Create the zone once, before any child, so that children only attach.
		d, err := dict.Open(c.Zone, dict.Options{Size: zoneSize})
		if err != nil {
			fmt.Fprintln(stderr, "worker serve:", err)
			return 1
		}
		d.Close()
	}
	c.MasterPid = os.Getpid()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "worker serve:", err)
		return 1
	}
	cfg, _ := json.Marshal(c)
	m := &serveMaster{
		addr: c.Addr, exe: exe, procs: procs, config: string(cfg),
		drainTO: c.Drain, readyTO: c.ReadyTimeout, unreadyRoll: c.UnreadyRoll,
		stdout: stdout, stderr: stderr,
	}
	return m.run()
}
