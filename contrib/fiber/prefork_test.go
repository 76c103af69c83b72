package shmfiber_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/session"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// The prefork server of these tests runs in this test binary, re-executed
// with helperEnv naming what to run (the os/exec TestHelperProcess
// pattern); fiber re-executes it again, with the same arguments and
// environment, for each child.
const (
	helperEnv     = "SHMFIBER_TEST_HELPER"
	helperZone    = "SHMFIBER_TEST_ZONE"
	helperAddr    = "SHMFIBER_TEST_ADDR"
	helperReady   = "SHMFIBER_TEST_READY"
	preforkLimit  = 300 // requests per client per minute
	preforkProcs  = 4   // children
	preforkConns  = 32  // connections per client
	preforkFactor = 3   // requests sent per client: factor × limit
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "prefork" {
		if err := preforkServer(); err != nil {
			fmt.Fprintln(os.Stderr, "prefork server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// preforkServer is the app of the prefork tests: "/" is limited per client
// address by a Count of preforkLimit per minute, "/s/set" and "/s/get"
// write and read a session over a Storage, every answer names the child's
// pid in X-Pid. Fiber starts GOMAXPROCS children; each writes a file named
// by its pid into the ready directory once it listens.
func preforkServer() error {
	d, err := dict.Open(os.Getenv(helperZone), dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := limiter.NewCount(d, "per-client", preforkLimit, time.Minute)
	if err != nil {
		return err
	}
	limit, err := shmfiber.New(l, shmfiber.Options{})
	if err != nil {
		return err
	}
	st, err := shmfiber.NewStorage(d, shmfiber.StorageOptions{Prefix: "sess:", NoEvict: true})
	if err != nil {
		return err
	}
	sess := session.New(session.Config{Storage: st})
	pid := strconv.Itoa(os.Getpid())
	app := fiber.New()
	app.Use(func(c fiber.Ctx) error { c.Set("X-Pid", pid); return c.Next() })
	app.Get("/", limit, func(c fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/s/set", sess, func(c fiber.Ctx) error {
		session.FromContext(c).Set("v", c.Query("v"))
		return c.SendString("set")
	})
	app.Get("/s/get", sess, func(c fiber.Ctx) error {
		v, _ := session.FromContext(c).Get("v").(string)
		return c.SendString(v)
	})
	return app.Listen(os.Getenv(helperAddr), fiber.ListenConfig{
		EnablePrefork:         true,
		DisableStartupMessage: true,
		ListenerAddrFunc: func(net.Addr) {
			os.WriteFile(filepath.Join(os.Getenv(helperReady), pid), nil, 0o644)
		},
	})
}

// startPrefork starts the prefork server over a new zone with
// preforkProcs children and returns its address and the children's pids
// once every child listens. Fiber starts GOMAXPROCS children, whatever
// the machine's cores: GOMAXPROCS in the master's environment sets their
// number. The server's process group is killed when the test ends.
func startPrefork(t *testing.T) (addr string, pids []string) {
	t.Helper()
	dir := t.TempDir()
	zone := filepath.Join(dir, "prefork.zone")
	d, err := dict.Open(zone, dict.Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	ready := filepath.Join(dir, "ready")
	if err := os.Mkdir(ready, 0o755); err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperEnv+"=prefork", helperZone+"="+zone, helperAddr+"="+addr, helperReady+"="+ready,
		"GOMAXPROCS="+strconv.Itoa(preforkProcs))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, _ := os.ReadDir(ready)
		if len(entries) == preforkProcs {
			for _, e := range entries {
				pids = append(pids, e.Name())
			}
			return addr, pids
		}
		select {
		case err := <-exited:
			t.Fatalf("prefork server exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d children listening after 30s", len(entries), preforkProcs)
		}
	}
}

// freeAddr returns a loopback address with a port no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// clientFrom returns an HTTP client whose connections leave from the
// loopback address src; keepAlive false makes each request a new
// connection.
func clientFrom(src string, keepAlive bool) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			DisableKeepAlives:   !keepAlive,
			MaxIdleConnsPerHost: 1,
		},
	}
}

// answer is what the prefork test keeps of a response.
type answer struct {
	status int
	pid    string
	h      http.Header
}

// Must show 1: a real prefork server with 4 children admits exactly the
// limit per client across all of them, each client's requests spread over
// many connections and so over the children, with the headers right.
func TestPreforkLimitAcrossChildren(t *testing.T) {
	addr, pids := startPrefork(t)
	clients := []string{"127.0.0.1", "127.0.0.2"}
	answers := make(map[string][]answer)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*preforkConns)
	for _, src := range clients {
		for c := range preforkConns {
			// One persistent connection per goroutine: the kernel gives
			// each new connection to one child (SO_REUSEPORT).
			n := preforkFactor * preforkLimit / preforkConns
			if c < preforkFactor*preforkLimit%preforkConns {
				n++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				hc := clientFrom(src, true)
				defer hc.CloseIdleConnections()
				var mine []answer
				for range n {
					resp, err := hc.Get("http://" + addr + "/")
					if err != nil {
						errs <- err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mine = append(mine, answer{resp.StatusCode, resp.Header.Get("X-Pid"), resp.Header})
				}
				mu.Lock()
				answers[src] = append(answers[src], mine...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rateLimit := regexp.MustCompile(`^"default";r=(\d+);t=(\d+)$`)
	// A reset or retry is at most the 60 s window, rounded up to whole
	// seconds: 61 when the child that reads the key's TTL has a zone clock
	// a little behind the one that started the window (each process's
	// coarse clock ticks on its own).
	const maxReset = 61
	for _, src := range clients {
		as := answers[src]
		if len(as) != preforkFactor*preforkLimit {
			t.Fatalf("%s: %d answers, want %d", src, len(as), preforkFactor*preforkLimit)
		}
		var remaining []int
		served := map[string]int{}
		rejected := 0
		for _, a := range as {
			served[a.pid]++
			h := a.h
			if p := h.Get("RateLimit-Policy"); p != `"default";q=300;w=60` {
				t.Fatalf("%s: RateLimit-Policy %q", src, p)
			}
			if v := h.Get("X-RateLimit-Limit"); v != "300" {
				t.Fatalf("%s: X-RateLimit-Limit %q", src, v)
			}
			rem, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
			reset, err2 := strconv.Atoi(h.Get("X-RateLimit-Reset"))
			m := rateLimit.FindStringSubmatch(h.Get("RateLimit"))
			if err1 != nil || err2 != nil || m == nil || m[1] != strconv.Itoa(rem) || reset < 1 || reset > maxReset {
				t.Fatalf("%s: bad headers %v", src, h)
			}
			switch a.status {
			case http.StatusOK:
				remaining = append(remaining, rem)
				if m[2] != strconv.Itoa(reset) {
					t.Fatalf("%s: RateLimit t=%s, X-RateLimit-Reset %d", src, m[2], reset)
				}
			case http.StatusTooManyRequests:
				rejected++
				ra, err := strconv.Atoi(h.Get("Retry-After"))
				if err != nil || ra < 1 || ra > maxReset || rem != 0 || m[2] != strconv.Itoa(ra) {
					t.Fatalf("%s: rejection with Retry-After %q, remaining %d, RateLimit %q", src, h.Get("Retry-After"), rem, h.Get("RateLimit"))
				}
			default:
				t.Fatalf("%s: status %d", src, a.status)
			}
		}
		if len(remaining) != preforkLimit || rejected != len(as)-preforkLimit {
			t.Errorf("%s: admitted %d, rejected %d; want exactly %d admitted", src, len(remaining), rejected, preforkLimit)
		}
		// Each admission is one atomic decision: the remaining quotas
		// the allowed requests saw are limit-1 … 0, each once.
		slices.Sort(remaining)
		for i, r := range remaining {
			if r != i {
				t.Errorf("%s: allowed requests saw remaining %v…, want 0…%d each once", src, remaining[:min(len(remaining), i+3)], preforkLimit-1)
				break
			}
		}
		for _, pid := range pids {
			if served[pid] == 0 {
				t.Errorf("%s: child %s served none of %d connections (served: %v)", src, pid, preforkConns, served)
			}
		}
		if len(served) != preforkProcs {
			t.Errorf("%s: served by %v, want the %d children %v", src, served, preforkProcs, pids)
		}
		t.Logf("%s: %d admitted, %d rejected, per child %v", src, len(remaining), rejected, served)
	}
}

// Must show 2: fiber's session middleware over a Storage sees one state
// across prefork children: a session written through one child is read,
// and rewritten, through every other.
func TestPreforkSessionAcrossChildren(t *testing.T) {
	addr, pids := startPrefork(t)
	hc := clientFrom("127.0.0.1", false) // a new connection, so any child, per request
	get := func(path, cookie string) (body, pid string, setCookie []*http.Cookie) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+addr+path, nil)
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "session_id", Value: cookie})
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b), resp.Header.Get("X-Pid"), resp.Cookies()
	}
	_, _, cookies := get("/s/set?v=first", "")
	var id string
	for _, c := range cookies {
		if c.Name == "session_id" {
			id = c.Value
		}
	}
	if id == "" {
		t.Fatalf("no session cookie in %v", cookies)
	}
	for round, want := range []string{"first", "second", "third"} {
		if round > 0 {
			if body, _, _ := get("/s/set?v="+want, id); body != "set" {
				t.Fatalf("set %s: %q", want, body)
			}
		}
		seen := map[string]int{}
		for range 48 {
			body, pid, _ := get("/s/get", id)
			if body != want {
				t.Fatalf("round %d: child %s read %q, want %q", round, pid, body, want)
			}
			seen[pid]++
		}
		if len(seen) != preforkProcs {
			t.Errorf("round %d: read through %v, want all children %v", round, seen, pids)
		}
	}
}
