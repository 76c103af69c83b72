package main

// serve_child.go: one child of "worker serve". It serves the SO_REUSEPORT
// socket of its slot, which the master opened and keeps (serve_master.go),
// so the kernel spreads connections over the children; it serves every
// request through httplimit over a limiter.Req on the shared zone (or a
// private one with -per-process), combined with the global limit of
// serve_global.go under -global-rate. It tells the master
// it listens by writing a byte to fd 3, drains on SIGTERM, and gets SIGTERM
// when the master dies (Pdeathsig).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// servePrivateZoneSize is the size of a -per-process child's own zone.
const servePrivateZoneSize = 1 << 20

func serveChild() int {
	var c serveConfig
	if err := json.Unmarshal([]byte(os.Getenv(serveConfigEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, "worker serve child: bad", serveConfigEnv, err)
		return 2
	}
	// The master may have died before Pdeathsig was set.
	if os.Getppid() != c.MasterPid {
		return 1
	}
	if os.Getenv(serveUnreadyEnv) == "1" {
		// Testing: a child stuck before it listens (-unready-roll).
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		return 1
	}
	if err := serveChildRun(c, os.NewFile(3, "ready"), os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "worker serve child %d: %v\n", os.Getpid(), err)
		return 1
	}
	return 0
}

// serveChildRun serves until SIGTERM or SIGINT, then drains.
func serveChildRun(c serveConfig, ready *os.File, stderr io.Writer) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

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
	h, err := serveHandler(c, d, l)
	if err != nil {
		return err
	}
	sock := os.NewFile(4, "listener")
	ln, err := net.FileListener(sock)
	sock.Close()
	if err != nil {
		return err
	}
	fresh := &serveFreshConns{conns: map[net.Conn]bool{}}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnState: fresh.track}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready.Write([]byte{1})
		ready.Close()
	}
	select {
	case err := <-served:
		return err
	case <-sigs:
	}
	// Stop accepting first: the master keeps the socket, so what is queued
	// waits for the other children. Shutdown would drop the first request of
	// a connection accepted but not yet read, so give those connections
	// their request before shutting down.
	ln.Close()
	<-served
	ctx, cancel := context.WithTimeout(context.Background(), c.Drain)
	defer cancel()
	fresh.wait(ctx, time.Second)
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// serveFreshConns tracks the connections accepted whose first request has
// not been read (http.StateNew).
type serveFreshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (f *serveFreshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
}

// wait returns once no connection is fresh, after max, or when ctx ends.
func (f *serveFreshConns) wait(ctx context.Context, max time.Duration) {
	end := time.Now().Add(max)
	for time.Now().Before(end) && ctx.Err() == nil {
		f.mu.Lock()
		n := len(f.conns)
		f.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// serveOpenZone attaches the shared zone, or creates a private one that no
// other process can open: its file is removed once mapped.
func serveOpenZone(c serveConfig) (*dict.Dict, error) {
	var o dict.Options
	if c.Precise {
		o.Clock = func() int64 { return time.Now().UnixMilli() }
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
// other path through the limiter to a handler answering "ok".
func serveHandler(c serveConfig, d *dict.Dict, l limiter.Limiter) (http.Handler, error) {
	m := &serveMetrics{dict: d}
	if sl, ok := l.(*serveLimits); ok {
		m.global = sl.global
	}
	mw, err := httplimit.New(l, httplimit.Options{
		NoDelay: c.NoDelay,
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
			time.Sleep(c.Slow)
		}
		io.WriteString(w, "ok\n")
	})
	mux := http.NewServeMux()
	mux.Handle("/metrics", m)
	mux.Handle("/", mw(ok))
	return mux, nil
}

// serveReusePort sets SO_REUSEPORT so that every child binds the same address.
func serveReusePort(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	return errors.Join(err, serr)
}

// serveMetrics counts a child's decisions and writes them, with the zone's
// figures, in the Prometheus text format.
type serveMetrics struct {
	dict                      *dict.Dict
	global                    *serveGlobal // nil without -global-rate
	allowed, rejected, errors atomic.Uint64
	inFlight                  atomic.Int64 // allowed requests not yet answered
}
