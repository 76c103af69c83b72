package shmfasthttp_test

import (
	"math/rand/v2"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/valyala/fasthttp"
)

// BenchmarkMiddleware measures a request through a fasthttp handler, in
// process (no network): with no limiter, and with New over a Count on a
// zone, with and without the rate limit headers. The limit is one no
// client reaches, but for mw=shmfasthttp-flood's: 1 an hour, so that every
// request is rejected, as in a flood. Each request comes from a client address drawn at
// random from 1,000, as a server's do. The overhead per request of the
// middleware is its ns/op less mw=none's. goroutines=1 is one request at a
// time; goroutines=GOMAXPROCS is RunParallel's.
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
	flood, err := limiter.NewCount(d, "flood", 1, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	mws := []struct {
		name   string
		l      limiter.Limiter
		o      *shmfasthttp.Options // nil: no limiter
		status int
	}{
		{"none", nil, nil, 200},
		{"shmfasthttp", count, &shmfasthttp.Options{}, 200},
		{"shmfasthttp-noheaders", count, &shmfasthttp.Options{Options: admit.Options{NoHeaders: true}}, 200},
		{"shmfasthttp-flood", flood, &shmfasthttp.Options{}, 429},
	}
	for i := range clients { // each flood client's first request is admitted
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, addrs[i], nil)
		mw, _ := shmfasthttp.New(flood, shmfasthttp.Options{})
		mw(ok)(&ctx)
	}
	for _, parallel := range []bool{false, true} {
		for _, m := range mws {
			h := fasthttp.RequestHandler(ok)
			if m.o != nil {
				mw, err := shmfasthttp.New(m.l, *m.o)
				if err != nil {
					b.Fatal(err)
				}
				h = mw(ok)
			}
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
