package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// routes serves each path through its own middleware, all keyed by the
// default key, the client's address.
func routes(t *testing.T, ls map[string]limiter.Limiter) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	for path, l := range ls {
		mux.Handle(path, mustNew(t, l, Options{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	}
	return mux
}

// get runs a request for path from one client through h and returns its
// status.
func get(h http.Handler, path string) int {
	r := httptest.NewRequest("GET", path, nil)
	r.RemoteAddr = "192.0.2.7:4321"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestTwoLimitsOneZone: /login at 3 per minute and /api at 100 per minute,
// two middlewares over one dictionary with the default key. Each limit
// counts its own requests: /api's budget does not lift /login's.
func TestTwoLimitsOneZone(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	login, err1 := limiter.NewCount(d, "login", 3, time.Minute)
	api, err2 := limiter.NewCount(d, "api", 100, time.Minute)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	h := routes(t, map[string]limiter.Limiter{"/login": login, "/api": api})
	for i := range 5 {
		if code := get(h, "/api"); code != http.StatusOK {
			t.Fatalf("/api call %d: %d, want 200", i+1, code)
		}
	}
	passed := 0
	for range 10 {
		switch code := get(h, "/login"); code {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("/login: %d, want 200 or 429", code)
		}
	}
	if passed != 3 {
		t.Errorf("%d of 10 calls to /login passed after 5 to /api, want 3", passed)
	}
	if code := get(h, "/api"); code != http.StatusOK {
		t.Errorf("/api after /login's limit: %d, want 200", code)
	}
}

// TestTwoKindsOneZone: a Req on /a and a Count on /b over one dictionary,
// with the default key: neither finds the other's state under its key, so
// neither answers 500.
func TestTwoKindsOneZone(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	a, err1 := limiter.NewReq(d, "a", 1000, 5) // delays of a millisecond
	b, err2 := limiter.NewCount(d, "b", 5, time.Minute)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	h := routes(t, map[string]limiter.Limiter{"/a": a, "/b": b})
	for i, path := range []string{"/a", "/b", "/a", "/b", "/b"} {
		if code := get(h, path); code != http.StatusOK {
			t.Errorf("call %d, %s: %d, want 200", i+1, path, code)
		}
	}
}
