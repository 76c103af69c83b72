package shmfiber_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/session"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// preforkPrefix names the environment of the prefork server the tests
// re-execute this binary as (testutil.PreforkMain).
const preforkPrefix = "SHMFIBER_TEST"

func TestMain(m *testing.M) {
	testutil.PreforkMain(preforkPrefix, preforkServer)
	os.Exit(m.Run())
}

// preforkServer is the app of the prefork tests: "/" is limited per client
// address by a Count of testutil.PreforkLimit per minute, "/s/set" and "/s/get"
// write and read a session over a Storage, every answer names the child's
// pid in X-Pid. Fiber starts GOMAXPROCS children; each writes a file named
// by its pid into the ready directory once it listens.
func preforkServer(ps testutil.PreforkServer) error {
	d, err := dict.Open(ps.Zone, dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := limiter.NewCount(d, "per-client", testutil.PreforkLimit, time.Minute)
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
	return app.Listen(ps.Addr, fiber.ListenConfig{
		EnablePrefork:         true,
		DisableStartupMessage: true,
		ListenerAddrFunc:      func(net.Addr) { ps.Ready() },
	})
}

// startPrefork starts the prefork server over a new zone and returns its
// address and its children's pids once every child listens.
func startPrefork(t *testing.T) (addr string, pids []string) {
	t.Helper()
	zone := filepath.Join(t.TempDir(), "prefork.zone")
	d, err := dict.Open(zone, dict.Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	return testutil.StartPrefork(t, preforkPrefix, zone)
}

// Must show 1: a real fiber prefork server with 4 children admits exactly
// the limit per client across all of them, each client's requests spread
// over many connections and so over the children, with the headers right.
func TestPreforkLimitAcrossChildren(t *testing.T) {
	addr, pids := startPrefork(t)
	testutil.CheckPreforkLimit(t, addr, pids)
}

// Must show 2: fiber's session middleware over a Storage sees one state
// across prefork children: a session written through one child is read,
// and rewritten, through every other.
func TestPreforkSessionAcrossChildren(t *testing.T) {
	addr, pids := startPrefork(t)
	hc := testutil.ClientFrom("127.0.0.1", false) // a new connection, so any child, per request
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
		if len(seen) != testutil.PreforkProcs {
			t.Errorf("round %d: read through %v, want all children %v", round, seen, pids)
		}
	}
}
