package redistier

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// activeTiered returns a Tiered of prefix over a fresh zone whose current
// window counts one request for each of n keys (client addresses), the
// windows' and the zone's clock being clk (a window of an hour, so that
// no window turns during a test). The zone's shards are large enough for
// the window's list of keys, which lives in one of them.
func activeTiered(t testing.TB, c redis.UniversalClient, clk *fakeClock, prefix string, n int, interval time.Duration, o Options) (*Tiered, *dict.Dict, []string) {
	t.Helper()
	d, err := dict.Open(testutil.TempZone(t), dict.Options{
		Size: max(16<<20, int64(n)*2<<10), Shards: 8,
		Clock: func() int64 { return clk.Now().UnixMilli() },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	o.Now = clk.Now
	l, err := NewTiered(d, c, prefix, 1<<40, time.Hour, interval, o)
	if err != nil {
		t.Fatal(err)
	}
	keys := testutil.ClientAddrs(1, 0, n)
	ctx := context.Background()
	for _, k := range keys {
		if dec, err := l.Incoming(ctx, k, true); err != nil || !dec.Allowed {
			t.Fatalf("Incoming(%q) = %+v, %v", k, dec, err)
		}
	}
	return l, d, keys
}
