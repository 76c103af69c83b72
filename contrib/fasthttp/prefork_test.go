package shmfasthttp_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/prefork"
)

// preforkPrefix names the environment of the prefork server the tests
// re-execute this binary as (testutil.PreforkMain).
const preforkPrefix = "SHMFASTHTTP_TEST"

func TestMain(m *testing.M) {
	testutil.PreforkMain(preforkPrefix, preforkServer)
	os.Exit(m.Run())
}

// preforkServer is the server of the prefork test: every request is
// limited per client address by a Count of testutil.PreforkLimit per minute, and
// every answer names the child's pid in X-Pid. Its children listen with
// SO_REUSEPORT, each on its own socket, and each writes a file named by its
// pid into the ready directory once it listens.
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
	limit, err := shmfasthttp.New(l, shmfasthttp.Options{})
	if err != nil {
		return err
	}
	pid := strconv.Itoa(os.Getpid())
	h := limit(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") })
	s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.Set("X-Pid", pid)
		h(ctx)
	}}
	p := prefork.New(s)
	p.Reuseport = true
	p.ServeFunc = func(ln net.Listener) error {
		if err := ps.Ready(); err != nil {
			return err
		}
		return s.Serve(ln)
	}
	return p.ListenAndServe(ps.Addr)
}

// Must show 1: a real fasthttp prefork server with 4 children admits
// exactly the limit per client across all of them, each client's requests
// spread over many connections and so over the children, with the headers
// right.
func TestPreforkLimitAcrossChildren(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "prefork.zone")
	d, err := dict.Open(zone, dict.Options{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	addr, pids := testutil.StartPrefork(t, preforkPrefix, zone)
	testutil.CheckPreforkLimit(t, addr, pids)
}
