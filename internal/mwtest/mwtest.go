// Package mwtest holds the checks of the options every rate limiting
// middleware of the module shares: httplimit, shmfasthttp and shmfiber
// each mount their middleware, and the checks send the same requests
// through it. A check fails its test with t.Errorf, naming the request.
package mwtest

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// Response is what a check reads of one answer.
type Response struct {
	Status int
	Header http.Header // canonical names
}

// Send sends one GET of path from remote ("192.0.2.1:1234"), with the
// header pairs hdr, and returns the answer.
type Send func(remote, path string, hdr ...string) Response

// Setup is a middleware to mount.
type Setup struct {
	Limiter limiter.Limiter
	Options admit.Options
	// SkipHealth skips requests for HealthPath, by the adapter's Skip or
	// Next.
	SkipHealth bool
	// UserKey keys requests by their X-User header, not by client address.
	UserKey bool
}

// HealthPath is the path that Setup.SkipHealth skips.
const HealthPath = "/healthz"

// Mount builds an adapter's middleware of s, in front of a handler that
// answers 401 when the request's X-Login header is "bad" and 200
// otherwise. It returns New's error.
type Mount func(t *testing.T, s Setup) (Send, error)

// mustMount is m of s, failing t on an error.
func mustMount(t *testing.T, m Mount, s Setup) Send {
	t.Helper()
	send, err := m(t, s)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	return send
}

// rateHeaders are the headers a decided request carries.
var rateHeaders = []string{"Ratelimit-Policy", "Ratelimit", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "Retry-After"}

// hasRateHeaders reports whether r carries a rate limit header.
func hasRateHeaders(r Response) bool {
	for _, h := range rateHeaders {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// CheckDryRun sends 10 requests from one client through a dry run of a
// Count of 3 and through an enforcing twin on another zone. The dry run
// answers 200 every time, without Retry-After, and with rate limit
// headers only with DryRunHeaders. Its Stats count 7, the enforcing
// twin's rejections.
func CheckDryRun(t *testing.T, m Mount) {
	for _, withHeaders := range []bool{false, true} {
		dz, clk := zonetest.Open(t, dict.Options{})
		ez, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
		dl, _ := limiter.NewCount(dz, "api", 3, time.Minute)
		el, _ := limiter.NewCount(ez, "api", 3, time.Minute)
		var st admit.Stats
		dry := mustMount(t, m, Setup{Limiter: dl, Options: admit.Options{DryRun: true, DryRunHeaders: withHeaders, Stats: &st}})
		enf := mustMount(t, m, Setup{Limiter: el})
		rejected := 0
		for i := range 10 {
			r := dry("198.51.100.7:1234", "/")
			if r.Status != http.StatusOK {
				t.Errorf("DryRunHeaders %v, request %d: status %d, want 200", withHeaders, i, r.Status)
			}
			if v := r.Header.Get("Retry-After"); v != "" {
				t.Errorf("DryRunHeaders %v, request %d: Retry-After %q, want none", withHeaders, i, v)
			}
			if got := r.Header.Get("X-Ratelimit-Remaining") != ""; got != withHeaders {
				t.Errorf("DryRunHeaders %v, request %d: has X-RateLimit-Remaining = %v, want %v", withHeaders, i, got, withHeaders)
			}
			if enf("198.51.100.7:1234", "/").Status == http.StatusTooManyRequests {
				rejected++
			}
		}
		if got := st.DryRunRejected(); got != 7 {
			t.Errorf("DryRunHeaders %v: DryRunRejected() = %d, want 7", withHeaders, got)
		}
		if rejected != 7 {
			t.Errorf("DryRunHeaders %v: enforcing rejections = %d, want 7", withHeaders, rejected)
		}
	}
}

// CheckExempt mounts a Count of 1 with 192.0.2.0/24 exempt and the health
// path skipped, keyed by client address and by X-User. Exempt and skipped
// requests answer 200, carry no rate limit header, and leave no key in
// the zone. Another client is limited as usual. An invalid prefix fails
// New with admit.ErrBadExempt.
func CheckExempt(t *testing.T, m Mount) {
	exempt := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	for _, userKey := range []bool{false, true} {
		d, _ := zonetest.Open(t, dict.Options{})
		l, _ := limiter.NewCount(d, "api", 1, time.Minute)
		send := mustMount(t, m, Setup{Limiter: l, Options: admit.Options{Exempt: exempt}, SkipHealth: true, UserKey: userKey})
		for i := range 3 {
			for _, req := range []struct {
				what, remote, path, user string
			}{
				{"exempt", "192.0.2.5:1234", "/", "exempt-user"},
				{"health check", "198.51.100.9:1234", HealthPath, "health-user"},
			} {
				r := send(req.remote, req.path, "X-User", req.user)
				if r.Status != http.StatusOK || hasRateHeaders(r) {
					t.Errorf("UserKey %v, %s request %d: status %d, headers %v; want 200 and no rate limit header", userKey, req.what, i, r.Status, r.Header)
				}
			}
		}
		for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
			r := send("203.0.113.1:1234", "/", "X-User", "limited-user")
			if r.Status != want || r.Header.Get("X-Ratelimit-Limit") != "1" {
				t.Errorf("UserKey %v, limited request %d: status %d, X-RateLimit-Limit %q; want %d, 1", userKey, i, r.Status, r.Header.Get("X-Ratelimit-Limit"), want)
			}
		}
		keys, err := d.Keys(100)
		if err != nil {
			t.Fatal(err)
		}
		limited := "203.0.113.1"
		if userKey {
			limited = "limited-user"
		}
		var counted []string // the limiter's keys, without its meta key
		for _, k := range keys {
			if !strings.HasPrefix(k, "meta|") {
				counted = append(counted, k)
			}
		}
		if len(counted) != 1 || !strings.HasSuffix(counted[0], "|"+limited) {
			t.Errorf("UserKey %v: Keys() = %q, want one counted key, ending in |%s", userKey, keys, limited)
		}
	}
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "api", 1, time.Minute)
	if _, err := m(t, Setup{Limiter: l, Options: admit.Options{Exempt: []netip.Prefix{{}}}}); !errors.Is(err, admit.ErrBadExempt) {
		t.Errorf("New with an invalid Exempt prefix = %v, want admit.ErrBadExempt", err)
	}
}

// CheckRefund mounts a login limit of 3 a minute that charges only
// failures: Refund is status != 401. 100 successful logins pass. Then 3
// failed ones answer 401 and the 4th is rejected with 429.
func CheckRefund(t *testing.T, m Mount) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "login", 3, time.Minute)
	send := mustMount(t, m, Setup{Limiter: l, Options: admit.Options{Refund: func(status int) bool { return status != http.StatusUnauthorized }}})
	for i := range 100 {
		if r := send("198.51.100.7:1234", "/login", "X-Login", "ok"); r.Status != http.StatusOK {
			t.Fatalf("successful login %d: status %d, want 200", i, r.Status)
		}
	}
	for i, want := range []int{401, 401, 401, 429} {
		if r := send("198.51.100.7:1234", "/login", "X-Login", "bad"); r.Status != want {
			t.Errorf("failed login %d: status %d, want %d", i, r.Status, want)
		}
	}
}
