package redistier

import (
	"context"
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

// t0 is the fake clock's start, a realistic Unix time so that µs since the
// epoch have the magnitude they have in production.
var t0 = time.UnixMilli(1_763_700_000_000)

// fakeClock is a caller clock the test moves by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Set(after time.Duration) { c.ns.Store(t0.Add(after).UnixNano()) }

// newClient returns a client of a fresh standalone redis-server, closed when
// the test ends.
func newClient(t testing.TB) (*testutil.Redis, redis.UniversalClient) {
	t.Helper()
	r := testutil.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return r, c
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
func fake(c *fakeClock) Options { return Options{Clock: CallerClock, Now: c.Now} }

// incoming calls l.Incoming and fails the test on an error.
func incoming(t *testing.T, l limiter.Limiter, key string, commit bool) limiter.Decision {
	t.Helper()
	d, err := l.Incoming(context.Background(), key, commit)
	if err != nil {
		t.Fatalf("Incoming(%q, %v): %v", key, commit, err)
	}
	return d
}
