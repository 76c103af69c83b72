package httplimit

import (
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// A request costs what Cost says, charged to the limiter: a GCRA with a
// burst of 10, its clock standing still, admits 4, 4 and 2, not a third 4.
// A cost below 1, or Cost's error, fails the request through Error.
func TestCost(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, err := limiter.NewGCRA(d, "batch", 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	mw := mustNew(t, l, Options{
		Cost: func(r *http.Request) (int64, error) { return strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64) },
		Error: func(w http.ResponseWriter, r *http.Request, err error) {
			errs = append(errs, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
		},
	})
	h := mw(okHandler(new(atomic.Int64)))
	for i, tt := range testutil.CostSteps {
		if w := serve(h, "192.0.2.9:1234", "X-Cost", tt.Cost); w.Code != tt.Status {
			t.Errorf("request %d, cost %s: status %d, want %d", i+1, tt.Cost, w.Code, tt.Status)
		}
	}
	if len(errs) != 2 || !errors.Is(errs[0], limiter.ErrBadCost) || !errors.Is(errs[1], strconv.ErrSyntax) {
		t.Errorf("Error got %v, want ErrBadCost, then the cost's parse error", errs)
	}
}
