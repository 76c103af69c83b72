package headers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/headers"
)

// A handler of any framework writes the headers through its own setter;
// here, net/http's.
func Example() {
	dir, _ := os.MkdirTemp("", "headers-example")
	defer os.RemoveAll(dir)
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "api", 2, time.Minute)
	p := l.Policy()
	hw, err := headers.New("per-client", &p)
	if err != nil {
		panic(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dec, err := l.Incoming(r.Context(), "198.51.100.7", true)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		hw.Write(dec, dec.ResetAfter, w.Header().Set)
		if !dec.Allowed {
			w.Header().Set(headers.RetryAfter, headers.RetryAfterValue(dec))
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	for range 3 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		fmt.Println(w.Code, w.Header().Get(headers.Policy), w.Header().Get(headers.Remaining),
			w.Header().Get(headers.RetryAfter) != "")
	}
	// Output:
	// 200 "per-client";q=2;w=60 1 false
	// 200 "per-client";q=2;w=60 0 false
	// 429 "per-client";q=2;w=60 0 true
}
