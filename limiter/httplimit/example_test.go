package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

func Example() {
	dir, _ := os.MkdirTemp("", "httplimit-example")
	defer os.RemoveAll(dir)
	// Every process of the server opens the same zone.
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "api", 2, time.Minute)
	proxies, _ := httplimit.ParsePrefixes("10.0.0.0/8")
	mw, err := httplimit.New(l, httplimit.Options{TrustedProxies: proxies})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	for range 3 {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.1.2.3:5555" // the proxy
		r.Header.Set("X-Forwarded-For", "198.51.100.7")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d %s remaining=%s retry-after=%q\n", w.Code, w.Header().Get("RateLimit-Policy"),
			w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 "default";q=2;w=60 remaining=1 retry-after=""
	// 200 "default";q=2;w=60 remaining=0 retry-after=""
	// 429 "default";q=2;w=60 remaining=0 retry-after="60"
}
