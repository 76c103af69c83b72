package shmprom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	shmprom "github.com/shmzone/shmzone/contrib/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/preforktest"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/shmzone/shmzone/prefork"
)

// The dry fleet's limiter: a Count of dryLimit requests per client per
// second, named "login" in both zones.
const dryLimit = 3

// helperDryFleet runs a prefork server on args[0] with args[3] children.
// Each child opens the zones args[1] and args[2] on a clock that each
// request sets: args[4], Unix ms, plus the request's X-Now header, in
// ms. The clock is injected: no decision reads the wall clock. "/dry"
// limits by the first zone's Count in a dry run (Options.DryRun), through
// a Collector's wrapper. "/enf" limits by the second zone's Count, which
// enforces unless its live dry run is on. "/metrics" serves the
// Collector, and the child's pid as dryfleet_pid. The client's key is its
// X-Client header.
func helperDryFleet(args []string) error {
	children, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	base, err := strconv.ParseInt(args[4], 10, 64)
	if err != nil {
		return err
	}
	return preforktest.Run(args[0], children, func(ctx context.Context, ln net.Listener) error {
		var now atomic.Int64
		now.Store(base)
		clock := func() int64 { return now.Load() }
		dryZone, err := dict.Open(args[1], dict.Options{Clock: clock})
		if err != nil {
			return err
		}
		defer dryZone.Close()
		enfZone, err := dict.Open(args[2], dict.Options{Clock: clock})
		if err != nil {
			return err
		}
		defer enfZone.Close()
		dl, err := limiter.NewCount(dryZone, "login", dryLimit, time.Second)
		if err != nil {
			return err
		}
		el, err := limiter.NewCount(enfZone, "login", dryLimit, time.Second)
		if err != nil {
			return err
		}
		c := shmprom.NewCollector()
		counted, err := c.AddLimiter("login", dl)
		if err != nil {
			return err
		}
		key := func(r *http.Request) (string, error) { return r.Header.Get("X-Client"), nil }
		dry, err := httplimit.New(counted, httplimit.Options{Key: key, Options: admit.Options{DryRun: true}})
		if err != nil {
			return err
		}
		enf, err := httplimit.New(el, httplimit.Options{Key: key})
		if err != nil {
			return err
		}
		reg := prometheus.NewRegistry()
		if err := reg.Register(c); err != nil {
			return err
		}
		pid := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dryfleet_pid", Help: "The child's pid."},
			func() float64 { return float64(os.Getpid()) })
		if err := reg.Register(pid); err != nil {
			return err
		}
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
		clocked := func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ms, err := strconv.ParseInt(r.Header.Get("X-Now"), 10, 64)
				if err != nil {
					http.Error(w, "bad X-Now", http.StatusBadRequest)
					return
				}
				now.Store(base + ms)
				h.ServeHTTP(w, r)
			})
		}
		mux := http.NewServeMux()
		mux.Handle("/dry", clocked(dry(ok)))
		mux.Handle("/enf", clocked(enf(ok)))
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		return prefork.Serve(ctx, &http.Server{Handler: mux}, ln, time.Minute)
	})
}

// dryStep is one request of the dry fleet's sequence.
type dryStep struct {
	client string
	at     int64 // ms after the base
}

// TestDryRunUnderPrefork: a fleet of children over one zone answers every
// request 200 in a dry run. The zone's dry-run count equals the
// rejections of the same sequence against a twin zone whose limiter
// enforces. A scrape of any child shows that count, and so does shmctl
// limits. The sequence is random but replayable, and its times are
// injected.
func TestDryRunUnderPrefork(t *testing.T) {
	const children, requests = 3, 90
	r := rand.New(rand.NewPCG(testutil.Seed(t), 46))
	steps := make([]dryStep, requests)
	at := int64(0)
	for i := range steps {
		at += int64(r.IntN(80)) // about 25 requests a second, over 4 clients of 3
		steps[i] = dryStep{client: fmt.Sprintf("c%d", r.IntN(4)), at: at}
	}
	dir := t.TempDir()
	dryPath, enfPath := filepath.Join(dir, "dry.zone"), filepath.Join(dir, "enf.zone")
	for _, p := range []string{dryPath, enfPath} {
		d, err := dict.Open(p, dict.Options{Size: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const base = 1_800_000_000_000
	var mu sync.Mutex
	var out strings.Builder
	testutil.Start(t, testutil.Helper(t, "dryfleet", addr, dryPath, enfPath, strconv.Itoa(children), strconv.Itoa(base)), func(line string) {
		mu.Lock()
		out.WriteString(line + "\n")
		mu.Unlock()
	})
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	waitUntil(t, "every child ready", func() bool {
		return len(fleetReadyRE.FindAllString(output(), -1)) >= children
	}, output)

	// New connections: the kernel spreads them over the children.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	send := func(path string, s dryStep) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Client", s.client)
		req.Header.Set("X-Now", strconv.FormatInt(s.at, 10))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, s := range steps {
		if code := send("/dry", s); code != http.StatusOK {
			t.Fatalf("dry run: request #%d %+v answered %d, want 200", i, s, code)
		}
	}
	rejected := 0
	for i, s := range steps {
		switch code := send("/enf", s); code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			rejected++
		default:
			t.Fatalf("enforcing: request #%d %+v answered %d", i, s, code)
		}
	}
	if rejected == 0 || rejected == requests {
		t.Fatalf("the enforcing run rejected %d of %d requests: the sequence tests nothing", rejected, requests)
	}
	t.Logf("the enforcing run rejected %d of %d requests", rejected, requests)

	dz, err := dict.Open(dryPath, dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dz.Close()
	if n, err := limiter.DryRunRejectedOf(dz, "count", "login"); n != int64(rejected) || err != nil {
		t.Errorf("the zone's dry-run count = %d, %v, want the enforcing run's %d rejections", n, err, rejected)
	}

	// Scrape until two children have answered: each shows the zone's count.
	pids := map[float64]bool{}
	waitUntil(t, "two children scraped", func() bool {
		mfs := scrapeWith(t, client, "http://"+addr+"/metrics")
		pid, ok := value(mfs, "dryfleet_pid", nil)
		if !ok {
			t.Fatal("a scrape without dryfleet_pid")
		}
		got, ok := value(mfs, "shmzone_limiter_dryrun_rejected_total", map[string]string{"limiter": "login"})
		if !ok || got != float64(rejected) {
			t.Fatalf("a child exported shmzone_limiter_dryrun_rejected_total = %v (present %v), want %d", got, ok, rejected)
		}
		pids[pid] = true
		return len(pids) >= 2
	}, output)

	// shmctl limits, the real binary, shows the count and no live dry run.
	shmctl := buildShmctl(t)
	var rows []struct {
		Kind           string `json:"kind"`
		Name           string `json:"name"`
		DryRun         bool   `json:"dry_run"`
		DryRunRejected int64  `json:"dry_run_rejected"`
	}
	if err := json.Unmarshal(runShmctl(t, shmctl, dir, "limits", "show", "--json", "dry"), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Kind != "count" || rows[0].Name != "login" || rows[0].DryRun || rows[0].DryRunRejected != int64(rejected) {
		t.Errorf("shmctl limits show --json dry = %+v, want count login, dry run off, %d rejected", rows, rejected)
	}
	if text := string(runShmctl(t, shmctl, dir, "limits", "dry")); !strings.Contains(text, fmt.Sprintf("(dry run off, %d rejected)", rejected)) {
		t.Errorf("shmctl limits dry lacks the count %d:\n%s", rejected, text)
	}

	// The live switch, from shmctl's process, holds for the next decision
	// of the children: a client over its limit is let through and counted
	// while it is on, and rejected once it is off.
	over := dryStep{client: "over", at: steps[len(steps)-1].at}
	for range dryLimit {
		if code := send("/enf", over); code != http.StatusOK {
			t.Fatalf("a fresh client answered %d, want 200", code)
		}
	}
	if code := send("/enf", over); code != http.StatusTooManyRequests {
		t.Fatalf("a client over its limit answered %d, want 429", code)
	}
	runShmctl(t, shmctl, dir, "limits", "set", "enf", "login", "--dry-run", "on")
	for i := range 3 {
		if code := send("/enf", over); code != http.StatusOK {
			t.Fatalf("live dry run on: request #%d answered %d, want 200", i, code)
		}
	}
	ez, err := dict.Open(enfPath, dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ez.Close()
	if n, err := limiter.DryRunRejectedOf(ez, "count", "login"); n != 3 || err != nil {
		t.Errorf("the twin zone's dry-run count = %d, %v, want 3", n, err)
	}
	if err := json.Unmarshal(runShmctl(t, shmctl, dir, "limits", "show", "--json", "enf"), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !rows[0].DryRun || rows[0].DryRunRejected != 3 {
		t.Errorf("shmctl limits show --json enf = %+v, want the dry run on, 3 rejected", rows)
	}
	runShmctl(t, shmctl, dir, "limits", "set", "enf", "login", "--dry-run", "off")
	if code := send("/enf", over); code != http.StatusTooManyRequests {
		t.Errorf("live dry run off: answered %d, want 429", code)
	}
	runShmctl(t, shmctl, dir, "limits", "set", "enf", "login", "--dry-run", "on")
	if code := send("/enf", over); code != http.StatusOK {
		t.Errorf("live dry run on again: answered %d, want 200", code)
	}
	runShmctl(t, shmctl, dir, "limits", "unset", "enf", "login")
	if code := send("/enf", over); code != http.StatusTooManyRequests {
		t.Errorf("after limits unset: answered %d, want 429", code)
	}
}

// buildShmctl builds shmctl from this repository into a temporary
// directory, and returns its path.
func buildShmctl(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	bin := filepath.Join(t.TempDir(), "shmctl")
	build := exec.Command(gobin, "build", "-o", bin, "./cmd/shmctl")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/shmctl: %v\n%s", err, out)
	}
	return bin
}

// runShmctl runs shmctl with args on the zones in dir, and returns its
// standard output. It fails the test on a nonzero exit.
func runShmctl(t *testing.T, bin, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SHMZONE_DIR="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("shmctl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
