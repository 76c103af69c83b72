package redistier

import (
	"context"
	"strconv"
	"testing"

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
