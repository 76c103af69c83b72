package shmfiber_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// A request costs what Cost says, charged to the limiter: a GCRA with a
// burst of 10, its clock standing still, admits 4, 4 and 2, not a third 4.
// A cost below 1, or Cost's error, fails the request through Error.
func TestCost(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{}) // its clock stands still
	l, err := limiter.NewGCRA(d, "batch", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	app := newApp(t, l, shmfiber.Options{
		Cost: func(c fiber.Ctx) (int64, error) { return strconv.ParseInt(c.Get("X-Cost"), 10, 64) },
		Error: func(c fiber.Ctx, err error) error {
			errs = append(errs, err)
			return c.Status(http.StatusBadRequest).SendString(err.Error())
		},
	})
	for i, tt := range testutil.CostSteps {
		if resp := do(t, app, "X-Cost", tt.Cost); resp.StatusCode != tt.Status {
			t.Errorf("request %d, cost %s: status %d, want %d", i+1, tt.Cost, resp.StatusCode, tt.Status)
		}
	}
	if len(errs) != 2 || !errors.Is(errs[0], limiter.ErrBadCost) || !errors.Is(errs[1], strconv.ErrSyntax) {
		t.Errorf("Error got %v, want ErrBadCost, then the cost's parse error", errs)
	}
}
