package shmfiber_test

import (
	"context"
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	fiberlimiter "github.com/gofiber/fiber/v3/middleware/limiter"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/valyala/fasthttp"
)

// BenchmarkMiddleware measures a request through a fiber app's handler, in
// process (no network), with no limiter, with New over a Count on a zone,
// with and without the rate limit headers, and with fiber's own limiter
// middleware over its memory storage, all with a limit no client reaches.
// mw=shmfiber-flood's limit is 1 an hour instead, so that every request is
// rejected, as in a flood. Each request comes from a client address drawn
// at random from 1,000, as a server's do. The overhead per request
// of a limiter is its ns/op less mw=none's. goroutines=1 is one request at
// a time; goroutines=GOMAXPROCS is RunParallel's.
func BenchmarkMiddleware(b *testing.B) {
	// On the coarse clock a server reads, not zonetest's fake one.
	d, err := dict.Open(filepath.Join(b.TempDir(), "bench.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	const clients = 1000
	addrs := make([]net.Addr, clients)
	for i := range addrs {
		addrs[i] = &net.TCPAddr{IP: net.IPv4(10, 0, byte(i>>8), byte(i)), Port: 1234}
	}
	count, err := limiter.NewCount(d, "bench", 1<<40, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	shm, err := shmfiber.New(count, shmfiber.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bare, err := shmfiber.New(count, shmfiber.Options{Options: admit.Options{NoHeaders: true}})
	if err != nil {
		b.Fatal(err)
	}
	flood, err := limiter.NewCount(d, "flood", 1, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	floodMW, err := shmfiber.New(flood, shmfiber.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range addrs { // each flood client's first request is admitted
		if _, err := flood.Incoming(context.Background(), a.(*net.TCPAddr).IP.String(), true); err != nil {
			b.Fatal(err)
		}
	}
	mws := []struct {
		name   string
		mw     fiber.Handler
		status int
	}{
		{"none", nil, 200},
		{"shmfiber", shm, 200},
		{"shmfiber-noheaders", bare, 200},
		{"shmfiber-flood", floodMW, 429},
		{"fiberlimiter", fiberlimiter.New(fiberlimiter.Config{Max: 1 << 30, Expiration: time.Minute}), 200},
	}
	for _, parallel := range []bool{false, true} {
		for _, m := range mws {
			app := fiber.New()
			if m.mw != nil {
				app.Use(m.mw)
			}
			app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
			h := app.Handler()
			g := 1
			if parallel {
				g = runtime.GOMAXPROCS(0)
			}
			b.Run("mw="+m.name+"/goroutines="+strconv.Itoa(g), func(b *testing.B) {
				b.ReportAllocs()
				serve := func(next func() bool) {
					var req fasthttp.Request
					req.SetRequestURI("/")
					// Init allocates a fake connection: once, not per request.
					var ctx fasthttp.RequestCtx
					ctx.Init(&req, nil, nil)
					for next() {
						ctx.Response.Reset()
						ctx.SetRemoteAddr(addrs[rand.IntN(clients)])
						h(&ctx)
						if ctx.Response.StatusCode() != m.status {
							b.Errorf("status %d", ctx.Response.StatusCode())
							return
						}
					}
				}
				if !parallel {
					serve(b.Loop)
					return
				}
				b.RunParallel(func(pb *testing.PB) { serve(pb.Next) })
			})
		}
	}
}
