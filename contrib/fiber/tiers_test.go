package shmfiber_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
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
	app := newApp(t, free, shmfiber.Options{
		Options: admit.Options{PolicyName: "free", Tiers: []admit.Tier{{Name: "paid", Limiter: paid}}},
		Choose:  func(c fiber.Ctx) string { return c.Get("X-Plan") },
		Error: func(c fiber.Ctx, err error) error {
			if !errors.Is(err, admit.ErrNoTier) {
				t.Errorf("Error got %v, want ErrNoTier", err)
			}
			return c.Status(http.StatusBadRequest).SendString("no such plan")
		},
	})
	for _, tt := range testutil.TierPlans {
		for i := 1; i <= tt.Limit+1; i++ {
			resp := do(t, app, "X-Plan", tt.Plan)
			want := http.StatusOK
			if i > tt.Limit {
				want = http.StatusTooManyRequests
			}
			if resp.StatusCode != want {
				t.Fatalf("plan %q, request %d: status %d, want %d", tt.Plan, i, resp.StatusCode, want)
			}
			if p := resp.Header.Get("RateLimit-Policy"); !strings.Contains(p, tt.Policy) {
				t.Errorf("plan %q: RateLimit-Policy %q does not name %q", tt.Plan, p, tt.Policy)
			}
		}
	}
	if resp := do(t, app, "X-Plan", "gold"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown plan: status %d, want 400 through Error", resp.StatusCode)
	}
	if _, err := shmfiber.New(free, shmfiber.Options{Options: admit.Options{Tiers: []admit.Tier{{Limiter: paid}}}}); !errors.Is(err, admit.ErrBadTier) {
		t.Errorf("New with a tier without a name = %v, want ErrBadTier", err)
	}
}
