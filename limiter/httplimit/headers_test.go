package httplimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
)

// The headers follow the limiter's policy when it changes: a Conn whose
// maximum is raised states its new limit from the next request on.
func TestHeadersFollowPolicy(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	conn, err := limiter.NewConn(d, "t", 3, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h := mustNew(t, conn, Options{Options: admit.Options{Wait: func(context.Context, time.Duration) error { return nil }}})(okHandler(new(atomic.Int64)))
	tests := []struct {
		max                   int64
		policy, limit, remain string
	}{
		{3, `"default";q=4;qu="concurrent-requests"`, "4", "3"},
		{5, `"default";q=6;qu="concurrent-requests"`, "6", "5"},
		{5, `"default";q=6;qu="concurrent-requests"`, "6", "5"},
		{2, `"default";q=3;qu="concurrent-requests"`, "3", "2"},
	}
	for i, tt := range tests {
		if err := conn.SetMax(tt.max); err != nil {
			t.Fatal(err)
		}
		w := serve(h, "198.51.100.1:4711")
		got := [3]string{w.Header().Get("RateLimit-Policy"), w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining")}
		if want := [3]string{tt.policy, tt.limit, tt.remain}; w.Code != 200 || got != want {
			t.Errorf("request %d with max %d: %d %q, want 200 %q", i+1, tt.max, w.Code, got, want)
		}
	}
}
