package shmfasthttp_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/valyala/fasthttp"
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
	h := wrap(t, free, shmfasthttp.Options{
		Options: admit.Options{PolicyName: "free", Tiers: []admit.Tier{{Name: "paid", Limiter: paid}}},
		Choose:  func(ctx *fasthttp.RequestCtx) string { return string(ctx.Request.Header.Peek("X-Plan")) },
		Error: func(ctx *fasthttp.RequestCtx, err error, next fasthttp.RequestHandler) {
			if !errors.Is(err, admit.ErrNoTier) {
				t.Errorf("Error got %v, want ErrNoTier", err)
			}
			ctx.SetStatusCode(fasthttp.StatusBadRequest)
		},
	}, ok)
	for _, tt := range testutil.TierPlans {
		for i := 1; i <= tt.Limit+1; i++ {
			resp := serve(h, "192.0.2.7:1234", "X-Plan", tt.Plan)
			want := fasthttp.StatusOK
			if i > tt.Limit {
				want = fasthttp.StatusTooManyRequests
			}
			if resp.StatusCode() != want {
				t.Fatalf("plan %q, request %d: status %d, want %d", tt.Plan, i, resp.StatusCode(), want)
			}
			if p := hdr(resp, "RateLimit-Policy"); !strings.Contains(p, tt.Policy) {
				t.Errorf("plan %q: RateLimit-Policy %q does not name %q", tt.Plan, p, tt.Policy)
			}
		}
	}
	if resp := serve(h, "192.0.2.7:1234", "X-Plan", "gold"); resp.StatusCode() != fasthttp.StatusBadRequest {
		t.Errorf("an unknown plan: status %d, want 400 through Error", resp.StatusCode())
	}
	if _, err := shmfasthttp.New(free, shmfasthttp.Options{Options: admit.Options{Tiers: []admit.Tier{{Limiter: paid}}}}); !errors.Is(err, admit.ErrBadTier) {
		t.Errorf("New with a tier without a name = %v, want ErrBadTier", err)
	}
}
