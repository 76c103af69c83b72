package httplimit

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/redistier"
)

// Requests choose their tier by a header: each tier holds its clients to
// its own limit, and the headers name the tier's policy; a name that is no
// tier's fails the request through Error.
func TestTiers(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
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
		Options: admit.Options{PolicyName: "free", Tiers: []admit.Tier{{Name: "paid", Limiter: paid}}},
		Choose:  func(r *http.Request) string { return r.Header.Get("X-Plan") },
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
	for _, tt := range testutil.TierPlans {
		for i := 1; i <= tt.Limit+1; i++ {
			w := serve(h, "192.0.2.7:1234", "X-Plan", tt.Plan)
			want := http.StatusOK
			if i > tt.Limit {
				want = http.StatusTooManyRequests
			}
			if w.Code != want {
				t.Fatalf("plan %q, request %d: status %d, want %d", tt.Plan, i, w.Code, want)
			}
			if p := w.Header().Get("RateLimit-Policy"); !strings.HasPrefix(p, `"`+tt.Policy+`";`) && !strings.HasPrefix(p, tt.Policy+";") {
				t.Errorf("plan %q: RateLimit-Policy %q does not name %q", tt.Plan, p, tt.Policy)
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
	d, _ := zonetest.Open(t, dict.Options{})
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
		if _, err := New(l, Options{Options: admit.Options{Tiers: tt.tiers}}); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%s: New = %v, want ErrBadPolicy", tt.name, err)
		}
	}
}

// Every kind of limiter, local and Redis, serves as a tier: each holds its
// requests to a limit of 2, whichever tier a request names. A Conn's
// limit is on requests in flight: its two are held until the third is
// decided.
func TestTiersEveryKind(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	r := testutil.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ro := redistier.Options{Timeout: time.Minute}
	var tiers []admit.Tier
	add := func(name string, l limiter.Limiter, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		tiers = append(tiers, admit.Tier{Name: name, Limiter: l})
	}
	req, err := limiter.NewReq(d, "req", 1, 1)
	add("req", req, err)
	count, err := limiter.NewCount(d, "count", 2, time.Minute)
	add("count", count, err)
	sw, err := limiter.NewSlidingWindow(d, "sw", 2, time.Minute)
	add("sw", sw, err)
	gcra, err := limiter.NewGCRA(d, "gcra", 1, 2)
	add("gcra", gcra, err)
	conn, err := limiter.NewConn(d, "conn", 2, 0, 0)
	add("conn", conn, err)
	rreq, err := redistier.NewReq(c, "rreq", "1r/s", 1, 0, ro)
	add("redis-req", rreq, err)
	rcount, err := redistier.NewCount(c, "rcount", 2, time.Minute, ro)
	add("redis-count", rcount, err)
	rsw, err := redistier.NewSlidingWindow(c, "rsw", 2, time.Minute, ro)
	add("redis-sw", rsw, err)
	rgcra, err := redistier.NewGCRA(c, "rgcra", 1, 2, ro)
	add("redis-gcra", rgcra, err)
	mw := mustNew(t, count, Options{
		Options: admit.Options{NoDelay: true, Tiers: tiers},
		Choose:  func(r *http.Request) string { return r.Header.Get("X-Tier") },
	})
	started, hold := make(chan struct{}, 2), make(chan struct{})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Tier") == "conn" {
			started <- struct{}{}
			<-hold
		}
	}))
	for _, tier := range tiers {
		if tier.Name == "conn" {
			continue
		}
		for i := 1; i <= 3; i++ {
			w := serve(h, "192.0.2.8:1234", "X-Tier", tier.Name)
			if want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[i <= 2]; w.Code != want {
				t.Errorf("tier %s, request %d: status %d, want %d", tier.Name, i, w.Code, want)
			}
		}
	}
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- serve(h, "192.0.2.8:1234", "X-Tier", "conn").Code }()
	}
	// The third waits for the two to be in their handler: the Conn counts
	// them.
	<-started
	<-started
	if w := serve(h, "192.0.2.8:1234", "X-Tier", "conn"); w.Code != http.StatusTooManyRequests {
		t.Errorf("tier conn, a third request in flight: status %d, want 429", w.Code)
	}
	close(hold)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("tier conn, a request of the two in flight: status %d, want 200", code)
		}
	}
}
