package redistier

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

func init() { redis.SetLogger(quiet{}) } // a killed server makes go-redis log every dial

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// t0 is where the tests' clocks (testutil.Clock) start, a realistic Unix
// time so that µs since the epoch have the magnitude they have in
// production.
var t0 = testutil.Epoch

// newClient returns a client of a fresh standalone redis-server, closed when
// the test ends.
func newClient(t testing.TB) (*testutil.Redis, redis.UniversalClient) {
	t.Helper()
	r := testutil.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return r, c
}

// callTimeout is the Options.Timeout of the limiters whose calls to a
// healthy server must succeed: generous, so that a loaded machine does not
// fail them; the fault tests, which need calls that time out, set their
// own.
const callTimeout = time.Minute

// faultHang bounds a wait for something the fault tests expect to happen
// (a limiter back to normal, a policy taking over, a call returning): a
// guard against a hang, generous enough for a loaded machine and the race
// detector, never a measure of how long it took.
const faultHang = time.Minute

// decisionKey marks the context of a decision, so that callHook sees which
// commands a decision sent.
type decisionKey struct{}

// decisionCtx returns a context that marks a decision's commands.
func decisionCtx() context.Context {
	return context.WithValue(context.Background(), decisionKey{}, true)
}

// callHook counts a client's script runs (the limiters' commands; a test's
// own reads are not counted): those whose context has no deadline within
// limit (the limiter's Options.Timeout), and those a decision sent
// (decisionCtx).
type callHook struct {
	limit                          time.Duration
	calls, undeadlined, byDecision atomic.Int64
}

func (h *callHook) check(ctx context.Context, cmd redis.Cmder) {
	if !strings.HasPrefix(cmd.Name(), "eval") {
		return
	}
	h.calls.Add(1)
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > h.limit {
		h.undeadlined.Add(1)
	}
	if ctx.Value(decisionKey{}) != nil {
		h.byDecision.Add(1)
	}
}

func (h *callHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *callHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.check(ctx, cmd)
		return next(ctx, cmd)
	}
}

func (h *callHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.check(ctx, cmd)
		}
		return next(ctx, cmds)
	}
}

// newFaultClient returns a client of a fresh standalone redis-server with
// its callHook for the limit timeout. The client honours its commands'
// context deadlines (ContextTimeoutEnabled, which the limiters require),
// and the hook sees that each script run has one within the timeout: what
// ends a call to a server that answers nothing is that deadline, the
// client's own timeouts being seconds.
func newFaultClient(t testing.TB, timeout time.Duration) (*testutil.Redis, redis.UniversalClient, *callHook) {
	t.Helper()
	r := testutil.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	h := &callHook{limit: timeout}
	c.AddHook(h)
	t.Cleanup(func() { c.Close() })
	return r, c, h
}

// checkDeadlines fails the test when a script run went out without a
// deadline within the timeout, or none went out.
func (h *callHook) checkDeadlines(t *testing.T) {
	t.Helper()
	if h.calls.Load() == 0 || h.undeadlined.Load() != 0 {
		t.Errorf("%d of %d script runs without a deadline within %v", h.undeadlined.Load(), h.calls.Load(), h.limit)
	}
}

// guard returns a stop function for a call that may hang on a server that
// answers nothing: if it has not been called within faultHang, the test
// fails and release (when not nil) runs, to end the call.
func guard(t *testing.T, what string, release func()) (stop func()) {
	tm := time.AfterFunc(faultHang, func() {
		t.Errorf("%s did not return in %v: no timeout ended it", what, faultHang)
		if release != nil {
			release()
		}
	})
	return func() { tm.Stop() }
}

// newClusterClient returns a client of a fresh 3-node cluster.
func newClusterClient(t testing.TB) (*testutil.RedisCluster, redis.UniversalClient) {
	t.Helper()
	rc := testutil.StartRedisCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return rc, c
}

// fake returns Options with the caller clock c.
func fake(c *testutil.Clock) Options {
	return Options{Clock: CallerClock, Now: c.Now, Timeout: callTimeout}
}

// incoming calls l.Incoming and fails the test on an error.
func incoming(t *testing.T, l limiter.Limiter, key string, commit bool) limiter.Decision {
	t.Helper()
	d, err := l.Incoming(context.Background(), key, commit)
	if err != nil {
		t.Fatalf("Incoming(%q, %v): %v", key, commit, err)
	}
	return d
}
