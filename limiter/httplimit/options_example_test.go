package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// A dry run tries a limit of 2 out: every request passes, and Stats
// counts the ones the limit would have rejected.
func Example_dryRun() {
	dir, _ := os.MkdirTemp("", "httplimit-example")
	defer os.RemoveAll(dir)
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "api", 2, time.Minute)
	var st admit.Stats
	mw, err := httplimit.New(l, httplimit.Options{
		Options: admit.Options{DryRun: true, Stats: &st},
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var codes []int
	for range 5 {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "198.51.100.7:5555"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	fmt.Println(codes, "would have rejected:", st.DryRunRejected())
	// Output:
	// [200 200 200 200 200] would have rejected: 3
}

// The office network and the health check are never limited, nor counted.
func Example_exempt() {
	dir, _ := os.MkdirTemp("", "httplimit-example")
	defer os.RemoveAll(dir)
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "api", 1, time.Minute)
	mw, err := httplimit.New(l, httplimit.Options{
		Options: admit.Options{Exempt: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
		Skip:    func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, req := range []struct{ remote, path string }{
		{"192.0.2.10:5555", "/"}, {"192.0.2.10:5555", "/"},
		{"198.51.100.7:5555", "/healthz"}, {"198.51.100.7:5555", "/healthz"},
		{"198.51.100.7:5555", "/"}, {"198.51.100.7:5555", "/"},
	} {
		r := httptest.NewRequest("GET", req.path, nil)
		r.RemoteAddr = req.remote
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(req.remote, req.path, w.Code)
	}
	// Output:
	// 192.0.2.10:5555 / 200
	// 192.0.2.10:5555 / 200
	// 198.51.100.7:5555 /healthz 200
	// 198.51.100.7:5555 /healthz 200
	// 198.51.100.7:5555 / 200
	// 198.51.100.7:5555 / 429
}

// A login limit of 2 failures a minute: Refund gives back the cost of
// every answer but 401, so successful logins never count.
func Example_refund() {
	dir, _ := os.MkdirTemp("", "httplimit-example")
	defer os.RemoveAll(dir)
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	l, _ := limiter.NewCount(d, "failed-login", 2, time.Minute)
	mw, err := httplimit.New(l, httplimit.Options{
		Options: admit.Options{Refund: func(status int) bool { return status != http.StatusUnauthorized }},
	})
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	var codes []int
	for _, password := range []string{"secret", "secret", "secret", "wrong", "wrong", "wrong", "secret"} {
		r := httptest.NewRequest("POST", "/login?password="+password, nil)
		r.RemoteAddr = "198.51.100.7:5555"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	fmt.Println(codes)
	// Output:
	// [200 200 200 401 401 429 429]
}
