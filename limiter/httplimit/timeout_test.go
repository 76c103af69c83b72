package httplimit

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// A decision that times out on a shard held by a stuck process follows the
// failure policy: 500 by default, the next handler when Options.Error fails
// open; the rejection path is not taken.
func TestLockTimeoutFailurePolicy(t *testing.T) {
	const timeout = 20 * time.Millisecond
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 1 << 20, Shards: 1, LockTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := limiter.NewReq(d, "t", 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the only shard inside Update until the test ends.
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Update("held", func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
			close(held)
			<-free
			return dict.Value{}, 0, true
		})
	}()
	<-held
	defer func() {
		close(free)
		if err := <-done; err != nil {
			t.Errorf("holding Update = %v", err)
		}
		if err := d.Check(); err != nil {
			t.Errorf("Check() = %v", err)
		}
	}()

	var rejected atomic.Int64
	onReject := func(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
		rejected.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
	}
	tests := []struct {
		name     string
		failOpen bool
		code     int
		calls    int64
	}{
		{"default fails closed", false, http.StatusInternalServerError, 0},
		{"Error fails open", true, http.StatusOK, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			var got error
			next := okHandler(&calls)
			o := Options{Rejected: onReject}
			if tc.failOpen {
				o.Error = func(w http.ResponseWriter, r *http.Request, err error) {
					got = err
					next.ServeHTTP(w, r)
				}
			}
			h := mustNew(t, l, o)(next)
			start := time.Now()
			w := serve(h, "192.0.2.1:1234")
			if el := time.Since(start); el < timeout {
				t.Errorf("request answered after %v, before the lock timeout %v", el, timeout)
			}
			if w.Code != tc.code || calls.Load() != tc.calls || rejected.Load() != 0 {
				t.Errorf("request on a held shard: code %d, next called %d times, rejected %d; want %d, %d, 0",
					w.Code, calls.Load(), rejected.Load(), tc.code, tc.calls)
			}
			if tc.failOpen && !errors.Is(got, limiter.ErrLockTimeout) {
				t.Errorf("Options.Error got %v, want ErrLockTimeout", got)
			}
		})
	}
}
