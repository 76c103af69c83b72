package httplimit_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// benchWriter is an http.ResponseWriter that keeps the status and drops
// the body. Reset readies it for the next request without allocating.
type benchWriter struct {
	h      http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(status int)      { w.status = status }

// WriteString keeps io.WriteString from copying s to a new []byte.
func (w *benchWriter) WriteString(s string) (int, error) { return len(s), nil }

func (w *benchWriter) reset() {
	clear(w.h)
	w.status = http.StatusOK
}

// BenchmarkMiddleware measures a request through a handler, in process
// (no network): with no limiter, and with New over a Count on a zone, with
// and without the rate limit headers. The limit is one no client reaches,
// but for mw=httplimit-flood's: 1 an hour, so that every request is
// rejected, as in a flood. Each request comes from a client address drawn at random from 1,000, as
// a server's do. The overhead per request of the middleware is its ns/op
// less mw=none's. goroutines=1 is one request at a time;
// goroutines=GOMAXPROCS is RunParallel's.
func BenchmarkMiddleware(b *testing.B) {
	// On the coarse clock a server reads, not zonetest's fake one.
	d, err := dict.Open(filepath.Join(b.TempDir(), "bench.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	const clients = 1000
	addrs := make([]string, clients)
	for i := range addrs {
		addrs[i] = "10.0." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&0xff) + ":1234"
	}
	count, err := limiter.NewCount(d, "bench", 1<<40, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	flood, err := limiter.NewCount(d, "flood", 1, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mws := []struct {
		name   string
		l      limiter.Limiter
		o      *httplimit.Options // nil: no limiter
		status int
	}{
		{"none", nil, nil, http.StatusOK},
		{"httplimit", count, &httplimit.Options{}, http.StatusOK},
		{"httplimit-noheaders", count, &httplimit.Options{Options: admit.Options{NoHeaders: true}}, http.StatusOK},
		{"httplimit-flood", flood, &httplimit.Options{}, http.StatusTooManyRequests},
	}
	floodMW, err := httplimit.New(flood, httplimit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range addrs { // each flood client's first request is admitted
		r, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
		r.RemoteAddr = a
		floodMW(ok).ServeHTTP(&benchWriter{h: http.Header{}}, r)
	}
	for _, parallel := range []bool{false, true} {
		for _, m := range mws {
			var h http.Handler = ok
			if m.o != nil {
				mw, err := httplimit.New(m.l, *m.o)
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
					r, err := http.NewRequest(http.MethodGet, "http://example.com/", nil)
					if err != nil {
						b.Error(err)
						return
					}
					w := &benchWriter{h: http.Header{}}
					for next() {
						w.reset()
						r.RemoteAddr = addrs[rand.IntN(clients)]
						h.ServeHTTP(w, r)
						if w.status != m.status {
							b.Errorf("status %d", w.status)
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
