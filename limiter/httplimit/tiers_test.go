package httplimit

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// Requests choose their tier by a header: each tier holds its clients to
// its own limit, and the headers name the tier's policy; a name that is no
// tier's fails the request through Error.
func TestTiers(t *testing.T) {
	d, _ := newDict(t, nil)
	free, err := limiter.NewCount(d, "free", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	paid, err := limiter.NewCount(d, "paid", 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int64
	mw := mustNew(t, free, Options{
		PolicyName: "free",
		Tiers:      []admit.Tier{{Name: "paid", Limiter: paid}},
		Choose:     func(r *http.Request) string { return r.Header.Get("X-Plan") },
		Error: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, admit.ErrNoTier) {
				t.Errorf("Error got %v, want ErrNoTier", err)
			}
			failed.Add(1)
			http.Error(w, "no such plan", http.StatusBadRequest)
		},
	})
	var calls atomic.Int64
	h := mw(okHandler(&calls))
	for _, tt := range []struct {
		plan   string
		limit  int
		policy string
	}{
		{"", 2, "free"},
		{"paid", 5, "paid"},
	} {
		for i := 1; i <= tt.limit+1; i++ {
			w := serve(h, "192.0.2.7:1234", "X-Plan", tt.plan)
			want := http.StatusOK
			if i > tt.limit {
				want = http.StatusTooManyRequests
			}
			if w.Code != want {
				t.Fatalf("plan %q, request %d: status %d, want %d", tt.plan, i, w.Code, want)
			}
			if p := w.Header().Get("RateLimit-Policy"); !strings.HasPrefix(p, `"`+tt.policy+`";`) && !strings.HasPrefix(p, tt.policy+";") {
				t.Errorf("plan %q: RateLimit-Policy %q does not name %q", tt.plan, p, tt.policy)
			}
		}
	}
	if w := serve(h, "192.0.2.7:1234", "X-Plan", "gold"); w.Code != http.StatusBadRequest || failed.Load() != 1 {
		t.Errorf("an unknown plan: status %d, %d calls of Error; want 400 through Error once", w.Code, failed.Load())
	}
	if n := calls.Load(); n != 2+5 {
		t.Errorf("the handler ran %d times, want 7", n)
	}
}

func TestTiersRejectBadOptions(t *testing.T) {
	d, _ := newDict(t, nil)
	l, err := limiter.NewCount(d, "c", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		tiers []admit.Tier
	}{
		{"no name", []admit.Tier{{Limiter: l}}},
		{"a name twice", []admit.Tier{{Name: "a", Limiter: l}, {Name: "a", Limiter: l}}},
		{"no limiter", []admit.Tier{{Name: "a"}}},
		{"a bad name", []admit.Tier{{Name: "a\nb", Limiter: l}}},
	} {
		if _, err := New(l, Options{Tiers: tt.tiers}); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%s: New = %v, want ErrBadPolicy", tt.name, err)
		}
	}
}
