package httplimit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/mwtest"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// mount is mwtest.Mount of this package.
func mount(t *testing.T, s mwtest.Setup) (mwtest.Send, error) {
	o := Options{Options: s.Options}
	if s.SkipHealth {
		o.Skip = func(r *http.Request) bool { return r.URL.Path == mwtest.HealthPath }
	}
	if s.UserKey {
		o.Key = func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }
	}
	mw, err := New(s.Limiter, o)
	if err != nil {
		return nil, err
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Login") == "bad" {
			http.Error(w, "bad login", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}))
	return func(remote, path string, hdr ...string) mwtest.Response {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return mwtest.Response{Status: w.Code, Header: w.Header()}
	}, nil
}

func TestDryRun(t *testing.T) { mwtest.CheckDryRun(t, mount) }
func TestExempt(t *testing.T) { mwtest.CheckExempt(t, mount) }
func TestRefund(t *testing.T) { mwtest.CheckRefund(t, mount) }

// TestRefundWriter: the writer that keeps the status for Refund reads a
// body without WriteHeader as 200, skips 1xx statuses, flushes through to
// the writer beneath, and a handler that panics is ended as a 500.
func TestRefundWriter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter)
		want    int
	}{
		{"nothing written", func(w http.ResponseWriter) {}, 200},
		{"body only", func(w http.ResponseWriter) { io.WriteString(w, "x") }, 200},
		{"401", func(w http.ResponseWriter) { w.WriteHeader(401) }, 401},
		{"103 then 404", func(w http.ResponseWriter) { w.WriteHeader(103); w.WriteHeader(404) }, 404},
		{"flush", func(w http.ResponseWriter) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush: Flush() = %v", err)
			}
		}, 200},
		{"panic", func(w http.ResponseWriter) { panic("boom") }, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			p := refundPass(t, func(status int) bool { got = status; return false })
			w := httptest.NewRecorder()
			func() {
				defer func() { recover() }()
				serveRefund(w, httptest.NewRequest("GET", "/", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.handler(w) }), p)
			}()
			if got != tc.want {
				t.Errorf("Refund status = %d, want %d", got, tc.want)
			}
			if tc.name == "flush" && !w.Flushed {
				t.Errorf("Flushed = false, want true")
			}
		})
	}
}

// refundPass returns the Pass of a request a Count admitted with Refund.
func refundPass(t *testing.T, refund func(status int) bool) admit.Pass {
	t.Helper()
	d, _ := zonetest.Open(t, dict.Options{})
	l, _ := limiter.NewCount(d, "r", 10, time.Minute)
	g, err := admit.New(l, admit.Options{Refund: refund})
	if err != nil {
		t.Fatal(err)
	}
	var a admit.Admission
	if err := g.Decide(context.Background(), "k", 1, &a); err != nil || !a.Pass.Refunds() {
		t.Fatalf("Decide = %v, Refunds() %v; want nil, true", err, a.Pass.Refunds())
	}
	return a.Pass
}
