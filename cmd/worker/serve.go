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
	"github.com/shmzone/shmzone/prefork"
)

// serveConfigEnv carries a child's configuration, as JSON, from the master.
const serveConfigEnv = "WORKER_SERVE_CONFIG"

// maxBurst is the largest burst limiter.NewReq takes, in requests.
const maxBurst = 1e12

// serveConfig is what the master hands each child.
type serveConfig struct {
	Addr       string        `json:"addr"`
	Zone       string        `json:"zone"`
	Rate       float64       `json:"rate"`
	Burst      float64       `json:"burst"`
	NoDelay    bool          `json:"nodelay"`
	PerProcess bool          `json:"per_process"`
	Precise    bool          `json:"precise_clock,omitempty"`
	Drain      time.Duration `json:"drain"`
	SlowPath   string        `json:"slow_path,omitempty"`
	Slow       time.Duration `json:"slow,omitempty"`
	ClockFile  string        `json:"clock_file,omitempty"`
	PidHeader  bool          `json:"pid_header,omitempty"`

	// The global limit (serve_global.go); none when Redis is empty.
	Redis          string        `json:"redis,omitempty"`
	GlobalLimit    int64         `json:"global_limit,omitempty"`
	GlobalWindow   time.Duration `json:"global_window,omitempty"`
	GlobalInterval time.Duration `json:"global_interval,omitempty"`
	RedisPolicy    string        `json:"redis_policy,omitempty"`
	RedisPrefix    string        `json:"redis_prefix,omitempty"`
	RedisUsername  string        `json:"redis_username,omitempty"`
	// RedisPasswordFD tells the child to read the password from the pipe
	// at prefork.ExtraFD (serve_secret.go).
	RedisPasswordFD bool `json:"redis_password_fd,omitempty"`

	// Password is Redis's password. It is never sent in the JSON: a child
	// reads it from its pipe.
	Password serveSecret `json:"-"`

	// The master's own settings, not sent.
	ReadyTimeout     time.Duration `json:"-"`
	MaxStartFailures int           `json:"-"`
	Takeover         bool          `json:"-"`
	UnreadyRoll      int           `json:"-"`
	PasswordFile     string        `json:"-"`
	PasswordEnv      string        `json:"-"`
}

const serveUsage = `usage: worker serve [flags]

A master re-executes itself as -procs children that listen on -addr with
SO_REUSEPORT and rate limit every request through one shared zone: -rate and
-burst per client address, the zone shared by every child. SIGTERM drains and
exits; SIGHUP replaces the children one by one; a child that dies is replaced,
at once if it had served for a second, else after a delay that doubles from
100ms to 5s, so that a child that cannot start is not restarted in a loop.
When -max-start-failures children of a slot in a row exit or are killed
before they listen, the master stops every child, closes the address and
exits 1. A roll's new children are not counted: their slots keep the old ones.
The master refuses an -addr that another socket listens on, unless -takeover
lets it share the address with an old master during an upgrade.
Each child answers /metrics, unlimited, in the Prometheus text format: its
decisions, its limiter's full-zone counts (worker_serve_limiter_*: writes
that evicted other clients' states, retries, decisions that found their
client's state evicted) and the zone's figures (shmzone_*).

With -redis and -global-rate, a request must also pass a global limit: all
requests together, over every host whose worker serve uses the same Redis and
-redis-prefix, may number -global-rate per fixed window (a second for r/s, a
minute for r/m). Each host counts in its zone and one child of the host sends
the count to Redis every -global-interval, so a decision never waits for
Redis; the hosts may overshoot the limit by what they admit in about two
intervals. A request rejected by either limit gets 429 and is not counted by
the other. While Redis fails, -redis-policy decides (open by default), and the
child that flushes logs it. Redis must answer when the master starts.

Redis's password comes from -redis-password-file or -redis-password-env,
with -redis-username for an ACL user. A -redis URL with a password is
refused: every user of the host can read the master's command line.
-redis-password-in-url accepts it all the same. The master hands the
password to each child on a pipe, never in the environment or the command
line.

flags:
`

// serveFlags parses the verb's arguments into the master's settings.
func serveFlags(args []string, stderr io.Writer) (procs int, zoneSize int64, c serveConfig, err error) {
	fs := flag.NewFlagSet("worker serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
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
	fs.BoolVar(&c.Precise, "precise-clock", false, "stamp each decision with a read of the system clock instead of the zone's coarse clock, which ticks every millisecond and lags when the machine is busy (a request may then be decided as if a little earlier)")
	fs.DurationVar(&c.Drain, "drain", 10*time.Second, "how long a child waits for in-flight requests on SIGTERM")
	fs.StringVar(&c.Redis, "redis", "", "Redis server of -global-rate: host:port, or a redis:// URL without a password")
	fs.StringVar(&c.RedisUsername, "redis-username", "", "Redis ACL user to log in as; the default user when empty")
	fs.StringVar(&c.PasswordFile, "redis-password-file", "", "file that holds Redis's password and nothing else; a trailing newline is dropped")
	fs.StringVar(&c.PasswordEnv, "redis-password-env", "", "environment variable that holds Redis's password; the master removes it from its environment, so no child inherits it")
	inURL := fs.Bool("redis-password-in-url", false, "accept a password in the -redis URL, which every user of this host can read in the master's command line")
	globalRate := fs.String("global-rate", "", "limit on all requests together, over every host that uses the same -redis and -redis-prefix: a fixed window of N requests per second or minute (1000r/s, 30r/m), on top of -rate; needs -redis")
	fs.DurationVar(&c.GlobalInterval, "global-interval", 100*time.Millisecond, "how often one child per host flushes the host's count to Redis; the hosts may admit up to 2 x hosts x (one host's rate) x interval over -global-rate in a window")
	fs.StringVar(&c.RedisPolicy, "redis-policy", "open", "what -global-rate does while Redis fails: open lets requests through (-rate still applies), closed answers 429")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", "worker-serve", "prefix of -global-rate's keys, in Redis and in the zone; hosts share a limit when they share -redis and -redis-prefix")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", 10*time.Second, "how long a new child may take to listen; one that takes longer is killed and replaced (a roll keeps the old child instead)")
	fs.IntVar(&c.MaxStartFailures, "max-start-failures", prefork.DefaultMaxStartFailures, "children of one slot that may fail to start in a row, exiting or killed before they listen, before the master stops and exits 1")
	fs.BoolVar(&c.Takeover, "takeover", false, "share -addr with another master's SO_REUSEPORT sockets, as in an upgrade, instead of refusing an address that another socket listens on")
	fs.StringVar(&c.SlowPath, "slow-path", "", "testing: a path answered only once the child is told to drain, -slow later")
	fs.DurationVar(&c.Slow, "slow", time.Second, "testing: how long -slow-path takes to answer once the child is told to drain")
	fs.StringVar(&c.ClockFile, "clock-file", "", "testing: a file that holds the time in Unix milliseconds, which every child's zone clock reads at each call instead of the system clock; replacing the file moves the time of every child at once (the zone's clock is a process's, not a request's, so a request header could not set it)")
	fs.BoolVar(&c.PidHeader, "pid-header", false, "testing: name the child that answered in each response's "+servePidHeader+" header")
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
	if c.ClockFile != "" && c.Precise {
		return 0, 0, c, errors.New("-clock-file and -precise-clock exclude each other")
	}
	if c.Rate, err = limiter.ParseRate(*rate); err != nil {
		return 0, 0, c, err
	}
	// As limiter.NewReq checks it in each child: a burst it refuses would
	// have the master restart children that cannot start, forever.
	if !(c.Burst >= 0 && c.Burst <= maxBurst) {
		return 0, 0, c, fmt.Errorf("-burst %v: want a number from 0 to %g", c.Burst, float64(maxBurst))
	}
	if c.Drain <= 0 {
		return 0, 0, c, errors.New("-drain must be positive")
	}
	if c.ReadyTimeout <= 0 {
		return 0, 0, c, errors.New("-ready-timeout must be positive")
	}
	if c.MaxStartFailures < 1 {
		return 0, 0, c, errors.New("-max-start-failures must be at least 1")
	}
	if err = serveAuthFlags(&c, *inURL); err != nil {
		return 0, 0, c, err
	}
	if err = serveGlobalFlags(&c, *globalRate); err != nil {
		return 0, 0, c, err
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
	warn, err := serveLoadPassword(&c)
	if warn != nil {
		fmt.Fprintln(stderr, "worker serve: warning:", warn)
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker serve:", err)
		return 2
	}
	c.RedisPasswordFD = c.Password != ""
	cfg, err := json.Marshal(c)
	if err != nil {
		fmt.Fprintln(stderr, "worker serve: the children's configuration:", err)
		return 1
	}
	if c.Redis != "" {
		if err := servePingRedis(c); err != nil {
			fmt.Fprintln(stderr, "worker serve: -redis:", err)
			return 1
		}
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
	return serveMaster(c, procs, string(cfg), stdout, stderr)
}
