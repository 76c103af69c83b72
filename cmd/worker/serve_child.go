package main

// serve_child.go: one child of "worker serve". It serves, through package
// prefork, the SO_REUSEPORT socket of its slot, which the master opened and
// keeps (serve_master.go), so the kernel spreads connections over the
// children; it serves every request through httplimit over a limiter.Req on
// the shared zone (or a private one with -per-process), combined with the
// global limit of serve_global.go under -global-rate. It drains on SIGTERM,
// which it also gets when the master dies.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/shmzone/shmzone/prefork"
)

// servePidHeader names the child that answered, under -pid-header.
const servePidHeader = "Worker-Pid"

// servePrivateZoneSize is the size of a -per-process child's own zone.
const servePrivateZoneSize = 1 << 20

func serveChild() int {
	var c serveConfig
	if err := json.Unmarshal([]byte(os.Getenv(serveConfigEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "worker serve child: bad", serveConfigEnv, err)
		return 2
	}
	if c.RedisPasswordFD {
		pw, err := serveReadSecret()
		if err != nil {
			fmt.Fprintf(os.Stderr, "worker serve child %d: %v\n", os.Getpid(), err)
			return 2
		}
		c.Password = pw
	}
	if os.Getenv(serveUnreadyEnv) == "1" {
		// Testing: a child stuck before it listens (-unready-roll).
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		return 1
	}
	err := prefork.Run(context.Background(), prefork.Options{}, func(ctx context.Context, ln net.Listener) error {
		return serveChildRun(ctx, c, ln, os.Stderr)
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "worker serve child %d: %v\n", os.Getpid(), err)
		return 1
	}
	return 0
}

// serveChildRun serves ln until ctx ends (SIGTERM or SIGINT), then drains.
func serveChildRun(ctx context.Context, c serveConfig, ln net.Listener, stderr io.Writer) error {
	d, err := serveOpenZone(c)
	if err != nil {
		return err
	}
	defer d.Close()
	req, err := limiter.NewReq(d, "serve", c.Rate, c.Burst)
	if err != nil {
		return err
	}
	var l limiter.Limiter = req
	if c.Redis != "" {
		g, err := serveOpenGlobal(c, d, stderr)
		if err != nil {
			return err
		}
		defer g.close()
		l = newServeLimits(req, g)
	}
	h, err := serveHandler(ctx, c, d, l)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return prefork.Serve(ctx, srv, ln, c.Drain)
}

// serveOpenZone attaches the shared zone, or creates a private one that no
// other process can open: its file is removed once mapped.
func serveOpenZone(c serveConfig) (*dict.Dict, error) {
	var o dict.Options
	if c.Precise {
		o.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	if c.ClockFile != "" {
		clock, err := serveFileClock(c.ClockFile)
		if err != nil {
			return nil, err
		}
		o.Clock = clock
	}
	if !c.PerProcess {
		return dict.Open(c.Zone, o)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("worker-serve-private-%d.zone", os.Getpid()))
	os.Remove(path)
	o.Size = servePrivateZoneSize
	d, err := dict.Open(path, o)
	os.Remove(path)
	return d, err
}

// serveHandler is a child's whole HTTP surface: /metrics unlimited, every
// other path through the limiter to a handler answering "ok". ctx ends
// when the child is told to drain.
func serveHandler(ctx context.Context, c serveConfig, d *dict.Dict, l limiter.Limiter) (http.Handler, error) {
	m := &serveMetrics{dict: d}
	switch l := l.(type) {
	case *limiter.Req:
		m.local = l
	case *serveLimits:
		m.local, m.global = l.local, l.global
	}
	mw, err := httplimit.New(l, httplimit.Options{
		Options: admit.Options{NoDelay: c.NoDelay},
		Rejected: func(w http.ResponseWriter, r *http.Request, _ limiter.Decision) {
			m.rejected.Add(1)
			http.Error(w, "too many requests", http.StatusTooManyRequests)
		},
		Error: func(w http.ResponseWriter, r *http.Request, err error) {
			m.errors.Add(1)
			http.Error(w, "limiter: "+err.Error(), http.StatusInternalServerError)
		},
	})
	if err != nil {
		return nil, err
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.allowed.Add(1)
		m.inFlight.Add(1)
		defer m.inFlight.Add(-1)
		if c.SlowPath != "" && r.URL.Path == c.SlowPath {
			// Testing: in flight until the drain, whatever the machine's pace.
			select {
			case <-ctx.Done():
				time.Sleep(c.Slow)
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "ok\n")
	})
	mux := http.NewServeMux()
	mux.Handle("/metrics", m)
	mux.Handle("/", mw(ok))
	if !c.PidHeader {
		return mux, nil
	}
	pid := strconv.Itoa(os.Getpid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(servePidHeader, pid)
		mux.ServeHTTP(w, r)
	}), nil
}

// serveMetrics counts a child's decisions and writes them, with the zone's
// figures, in the Prometheus text format.
type serveMetrics struct {
	dict                      *dict.Dict
	local                     *limiter.Req // the per-client limit (-rate)
	global                    *serveGlobal // nil without -global-rate
	allowed, rejected, errors atomic.Uint64
	inFlight                  atomic.Int64 // allowed requests not yet answered
}
