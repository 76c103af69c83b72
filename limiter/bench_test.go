package limiter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// benchZoneSize is the benchmarks' zone: 10 MiB, as dict's, or the size
// that testutil.BenchZoneEnv gives (benchZone).
const benchZoneSize = 10 << 20

// benchZone returns the size of the zone b opens.
func benchZone(b *testing.B) int64 { return testutil.BenchZone(b, benchZoneSize) }

// benchOps are the operations BenchmarkLimiter measures, one decision each
// (conn: an Incoming and its Leaving). Their limits are never reached, so
// every decision writes.
var benchOps = map[string]func(d *dict.Dict) (func(ctx context.Context, key string) error, error){
	"req": func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewReq(d, "t", 1e9, 1e9)
		return commitOp(l), err
	},
	"count": func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewCount(d, "t", 1<<53, time.Hour)
		return commitOp(l), err
	},
	"conn": func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewConn(d, "t", 1<<40, 0, time.Millisecond)
		return func(ctx context.Context, key string) error {
			if _, err := l.Incoming(ctx, key, true); err != nil {
				return err
			}
			_, err := l.Leaving(ctx, key, 0)
			return err
		}, err
	},
	"sliding": func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewSlidingWindow(d, "t", 1<<30, time.Hour)
		return commitOp(l), err
	},
	"gcra": func(d *dict.Dict) (func(context.Context, string) error, error) {
		l, err := NewGCRA(d, "t", 1e9, 1<<30)
		return commitOp(l), err
	},
	// update is the floor of req, sliding and gcra: a dict.Update that
	// rewrites a 16-byte value and decides nothing.
	"update": func(d *dict.Dict) (func(context.Context, string) error, error) {
		v := dict.Bytes(make([]byte, reqSize))
		fn := func(dict.Value, bool) (dict.Value, time.Duration, bool) { return v, 0, true }
		return func(ctx context.Context, key string) error { return d.Update(key, fn) }, nil
	},
	"combine": func(d *dict.Dict) (func(context.Context, string) error, error) {
		req, err1 := NewReq(d, "t", 1e9, 1e9)
		count, err2 := NewCount(d, "t", 1<<53, time.Hour)
		ls := []Limiter{req, count}
		// One key for both: each keeps it in its own namespace.
		return func(ctx context.Context, key string) error {
			_, err := Combine(ctx, ls, []string{key, key})
			return err
		}, errorsJoin(err1, err2)
	},
}

// commitOp returns a benchmark operation: one committed Incoming.
func commitOp(l Limiter) func(context.Context, string) error {
	return func(ctx context.Context, key string) error {
		_, err := l.Incoming(ctx, key, true)
		return err
	}
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// benchKeyNames returns n keys of 16 bytes, as dict's benchmarks use.
func benchKeyNames(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("%skey:%011d", prefix, i)
	}
	return ks
}

// BenchmarkLimiter measures one decision in one process, on 1,000 keys, with
// the dictionary's coarse clock; and, in limiterProcs, the same decisions
// in one and two processes at once.
func BenchmarkLimiter(b *testing.B) {
	for _, op := range []string{"update", "req", "count", "conn", "sliding", "gcra", "combine", hotOp} {
		b.Run("op="+op+"/keys=1000", func(b *testing.B) {
			d, err := dict.Open(filepath.Join(b.TempDir(), "bench.zone"), dict.Options{Size: benchZone(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			fn, err := benchOps[op](d)
			if err != nil {
				b.Fatal(err)
			}
			ks := benchKeyNames("", 1000)
			ctx := context.Background()
			for _, k := range ks {
				if err := fn(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := fn(ctx, ks[i%len(ks)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	limiterProcs(b)
}
