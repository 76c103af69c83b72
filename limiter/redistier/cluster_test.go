package redistier

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestSpecCluster runs the standalone suite on a 3-node Redis Cluster, then
// spreads keys over every node and checks that each node holds some: every
// decision's key lives in one slot, wherever it is.
func TestSpecCluster(t *testing.T) {
	rc, c := newClusterClient(t)
	suite(t, c)
	t.Run("Compat", func(t *testing.T) {
		clk := new(testutil.Clock)
		l, err := NewReq(c, "zone", "2r/s", 10, 0, fake(clk))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			key := "spread-" + strconv.Itoa(i)
			incoming(t, l, key, true)
			if d := incoming(t, l, key, true); d.State != 1 || d.Delay.Milliseconds() != 500 {
				t.Fatalf("second call on %s = %+v, want state 1, delay 500ms", key, d)
			}
			v, _ := stored(t, c, "zone:"+key)
			if v[0] != 1000 || int64(v[1]) != t0.UnixMilli() || v[2] != 0 {
				t.Fatalf("zone:%s = %v", key, v)
			}
		}
	})
	t.Run("Live", func(t *testing.T) { testLiveCluster(t, rc) })
	t.Run("Tiered", func(t *testing.T) { testTiered(t, true, rc.Addrs()) })
	t.Run("TieredReset", func(t *testing.T) { testTieredReset(t, c) })
	for _, n := range rc.Nodes {
		size, err := testutil.RedisDo(n.Addr, "DBSIZE")
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := strconv.Atoi(size); k == 0 {
			t.Errorf("node %s holds no key: the keys did not spread", n.Addr)
		}
		t.Logf("node %s: %s keys", n.Addr, size)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// testLiveCluster: on Redis Cluster, a live change made through one client
// is in force at another's next decision. A prefix with a hash tag puts the
// live hash in the keys' slot, and the script reads it. One without makes
// each limiter read the hash apart, here at its first decision.
func testLiveCluster(t *testing.T, rc *testutil.RedisCluster) {
	ctx := context.Background()
	for _, p := range []string{"{live}", "live"} {
		a, err := NewCount(newClusterClientOf(t, rc), p, 1, time.Hour, Options{Timeout: callTimeout})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.SetLimit(ctx, 3); err != nil {
			t.Fatalf("%s: SetLimit: %v", p, err)
		}
		b, err := NewCount(newClusterClientOf(t, rc), p, 1, time.Hour, Options{Timeout: callTimeout})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			if got := fill(t, b, "k"+strconv.Itoa(i)); got != 3 {
				t.Errorf("%s: key %d admitted %d, want the live 3", p, i, got)
			}
		}
		if s, err := b.Setting(ctx); err != nil || s.InForce.Limit != 3 {
			t.Errorf("%s: Setting() = %+v, %v; want limit 3", p, s, err)
		}
	}
}

// newClusterClientOf returns another client of rc.
func newClusterClientOf(t *testing.T, rc *testutil.RedisCluster) redis.UniversalClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}
