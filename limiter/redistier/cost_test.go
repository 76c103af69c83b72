package redistier

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// costKind builds a Redis limiter of one kind under prefix, and says the
// largest cost it admits at once.
type costKind struct {
	name  string
	most  int64
	build func(c redis.UniversalClient, prefix string, o Options) (limiter.Limiter, error)
}

var costKinds = []costKind{
	{"req", 7, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
		return NewReq(c, p, "5r/s", 6, 0, o)
	}},
	{"count", 9, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
		return NewCount(c, p, 9, time.Second, o)
	}},
	{"sliding", 8, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
		return NewSlidingWindow(c, p, 8, 800*time.Millisecond, o)
	}},
	{"gcra", 6, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
		return NewGCRA(c, p, 4, 6, o)
	}},
}

// TestRedisCostIsRequestsAtOnce: IncomingN(n) is n Incomings at one time,
// all or none, on Redis as in the zone. Two prefixes on one caller clock
// run the same random sequence: one charges n at once, the other n times
// one. When the first allows, the second allows all n and the keys' values
// are equal; when it rejects, the second rejects one of the n, and its key
// is then set to the first's. UncommitN(n) is n Uncommits.
//
// Redis's clock must not decide. It runs between the twins' calls, so a
// key that it expires would end for one twin before the other. Count's
// window runs on Redis's clock: here it lasts an hour, and the test ends
// it after countWindow of the caller's clock, deleting both keys at once.
// The other kinds keep their state in the caller's clock, and their TTLs
// only clean up: sameRedis sets them to an hour after each step.
func TestRedisCostIsRequestsAtOnce(t *testing.T) {
	const countWindow = time.Second
	_, c := newClient(t)
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			clk := new(testutil.Clock)
			build := k.build
			if k.name == "count" {
				build = func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
					return NewCount(c, p, k.most, time.Hour, o)
				}
			}
			a, err := build(c, "a-"+k.name, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := build(c, "b-"+k.name, fake(clk))
			ka, kb := "a-"+k.name+":k", "b-"+k.name+":k"
			ctx := context.Background()
			at, opened := time.Duration(0), time.Duration(-1)
			for i := range 300 {
				at += time.Duration(r.IntN(300)) * time.Millisecond
				clk.Set(at)
				if k.name == "count" && opened >= 0 && at-opened >= countWindow {
					c.Del(ctx, ka, kb)
					opened = -1
				}
				since := time.Now()
				n := 1 + r.Int64N(k.most)
				if r.IntN(5) == 0 {
					if err := a.UncommitN(ctx, "k", n); err != nil {
						t.Fatalf("step %d: UncommitN(%d): %v", i, n, err)
					}
					for range n {
						if err := b.Uncommit(ctx, "k"); err != nil {
							t.Fatalf("step %d: Uncommit: %v", i, err)
						}
					}
				} else {
					got, err := a.IncomingN(ctx, "k", n, true)
					if err != nil {
						t.Fatalf("step %d: IncomingN(%d): %v", i, n, err)
					}
					all := true
					for range n {
						all = all && incoming(t, b, "k", true).Allowed
					}
					if got.Allowed != all {
						t.Fatalf("step %d at +%v: IncomingN(%d) allowed %v; %d Incomings all allowed: %v", i, at, n, got.Allowed, n, all)
					}
					if !got.Allowed {
						copyRedis(t, c, ka, kb)
					}
				}
				if sameRedis(t, c, ka, kb, i, time.Since(since)) && opened < 0 {
					opened = at
				}
			}
		})
	}
}

// sameRedis fails the test when keys ka and kb differ in value, or one
// has a TTL and the other none, and says whether they exist. It reads both
// in one transaction, at one moment of Redis's clock. The twins write a
// key with one TTL, at most gap apart. So one key may have expired while
// the other lives on for at most gap: then the other is deleted, and the
// twins go on from one state. Every key left gets a TTL of an hour.
func sameRedis(t *testing.T, c redis.UniversalClient, ka, kb string, step int, gap time.Duration) bool {
	t.Helper()
	ctx := context.Background()
	var da, db *redis.StringCmd
	var ta, tb *redis.DurationCmd
	c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		da, db = p.Dump(ctx, ka), p.Dump(ctx, kb)
		ta, tb = p.PTTL(ctx, ka), p.PTTL(ctx, kb)
		return nil
	})
	for _, err := range []error{da.Err(), db.Err(), ta.Err(), tb.Err()} {
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("step %d: reading %s and %s: %v", step, ka, kb, err)
		}
	}
	// A rounding of Redis's ms clock on each side.
	gap += 2 * time.Millisecond
	switch {
	case da.Val() == "" && db.Val() != "" && tb.Val() >= 0 && tb.Val() <= gap:
		c.Del(ctx, kb)
		return false
	case db.Val() == "" && da.Val() != "" && ta.Val() >= 0 && ta.Val() <= gap:
		c.Del(ctx, ka)
		return false
	case da.Val() != db.Val() || (ta.Val() < 0) != (tb.Val() < 0):
		t.Fatalf("step %d: %s = %q (TTL %v), %s = %q (TTL %v); written at most %v apart",
			step, ka, da.Val(), ta.Val(), kb, db.Val(), tb.Val(), gap)
	}
	if da.Val() == "" {
		return false
	}
	c.PExpire(ctx, ka, time.Hour)
	c.PExpire(ctx, kb, time.Hour)
	return true
}

// copyRedis sets kb to ka's value and TTL, or deletes it.
func copyRedis(t *testing.T, c redis.UniversalClient, ka, kb string) {
	t.Helper()
	ctx := context.Background()
	c.Del(ctx, kb)
	v, err := c.Dump(ctx, ka).Result()
	if errors.Is(err, redis.Nil) {
		return
	}
	ttl, _ := c.PTTL(ctx, ka).Result()
	if ttl < 0 {
		ttl = 0
	}
	if err != nil || c.Restore(ctx, kb, ttl, v).Err() != nil {
		t.Fatalf("copying %s to %s: %v", ka, kb, err)
	}
}

// TestRedisHostileCost: a cost below 1 is limiter.ErrBadCost, without
// calling Redis. One above what the kind admits is a rejection by the
// script, which reads the numbers in force; GCRA's rejects as redis_rate
// does. UncommitN of either is ErrBadCost. Nothing is written.
func TestRedisHostileCost(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	for _, k := range costKinds {
		t.Run(k.name, func(t *testing.T) {
			l, err := k.build(c, "h-"+k.name, Options{Timeout: callTimeout})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{0, -1, math.MinInt64} {
				if _, err := l.IncomingN(ctx, "k", n, true); !errors.Is(err, limiter.ErrBadCost) {
					t.Errorf("IncomingN(%d) = %v, want ErrBadCost", n, err)
				}
			}
			for _, n := range []int64{k.most + 1, 1 << 53, math.MaxInt64} {
				dec, err := l.IncomingN(ctx, "k", n, true)
				if err != nil || dec.Allowed || dec.RetryAfter <= 0 {
					t.Errorf("IncomingN(%d) = %+v, %v; want a rejection", n, dec, err)
				}
				if k.name != "gcra" && dec.RetryAfter != math.MaxInt64 {
					t.Errorf("IncomingN(%d).RetryAfter = %v, want the longest Duration", n, dec.RetryAfter)
				}
			}
			for _, n := range []int64{0, -1, k.most + 1, math.MaxInt64} {
				if err := l.UncommitN(ctx, "k", n); !errors.Is(err, limiter.ErrBadCost) {
					t.Errorf("UncommitN(%d) = %v, want ErrBadCost", n, err)
				}
			}
			if n, _ := c.Exists(ctx, "h-"+k.name+":k").Result(); n != 0 {
				t.Errorf("hostile costs wrote the key")
			}
		})
	}
}

// TestRedisReset: a key charged until it is rejected decides, once Reset,
// as a key never seen, and its Redis key is gone; a forbidden Req key
// too. Resetting an absent key is no error.
func TestRedisReset(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	kinds := append(costKinds, costKind{"req-forbidding", 1, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
		return NewReq(c, p, "1r/m", 0, time.Hour, o)
	}})
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			l, err := k.build(c, "r-"+k.name, fake(clk))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				if !incoming(t, l, "k", true).Allowed {
					break
				}
				if i == 100 {
					t.Fatal("never rejected")
				}
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if n, _ := c.Exists(ctx, "r-"+k.name+":k").Result(); n != 0 {
				t.Errorf("the key exists after Reset")
			}
			got, want := incoming(t, l, "k", true), incoming(t, l, "fresh", true)
			if got != want || !got.Allowed {
				t.Errorf("after Reset: %+v, want a fresh key's %+v", got, want)
			}
			if err := l.Reset(ctx, "absent"); err != nil {
				t.Errorf("Reset of an absent key = %v", err)
			}
			if err := l.Reset(ctx, ""); !errors.Is(err, ErrBadKey) {
				t.Errorf("Reset(\"\") = %v, want ErrBadKey", err)
			}
		})
	}
}

// TestRedisResetFailLocal: with Redis down, Reset returns ErrUnavailable
// whatever the policy, and under FailLocal resets the local limiter's key.
func TestRedisResetFailLocal(t *testing.T) {
	r, c := newClient(t)
	d, err := dict.Open(filepath.Join(t.TempDir(), "local.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	local, _ := limiter.NewCount(d, "local", 2, time.Hour)
	l, err := NewCount(c, "down", 2, time.Hour, Options{Timeout: 200 * time.Millisecond, OnFailure: FailLocal, Local: local})
	if err != nil {
		t.Fatal(err)
	}
	r.Kill()
	ctx := context.Background()
	if dec, err := l.IncomingN(ctx, "k", 2, true); err != nil || !dec.Allowed {
		t.Fatalf("IncomingN(2) with Redis down = %+v, %v; want the local limiter's admission", dec, err)
	}
	if dec, _ := local.Incoming(ctx, "k", false); dec.Allowed {
		t.Fatalf("the local limiter did not count the cost")
	}
	if err := l.Reset(ctx, "k"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reset with Redis down = %v, want ErrUnavailable", err)
	}
	if dec, _ := local.IncomingN(ctx, "k", 2, false); !dec.Allowed {
		t.Errorf("the local limiter's key was not reset")
	}
}

// TestRedisCostConcurrent: 8 goroutines charge costs of 1 to 7 to one key
// of each kind, on a caller clock that stands still: together they admit
// exactly what the limiter admits at once. Count counts rejected commits
// too and admits at most its limit.
func TestRedisCostConcurrent(t *testing.T) {
	_, c := newClient(t)
	for _, k := range []costKind{
		{"req", 100, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
			return NewReq(c, p, "1r/s", 99, 0, o)
		}},
		{"count", 100, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
			return NewCount(c, p, 100, time.Hour, o)
		}},
		{"sliding", 100, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
			return NewSlidingWindow(c, p, 100, time.Hour, o)
		}},
		{"gcra", 100, func(c redis.UniversalClient, p string, o Options) (limiter.Limiter, error) {
			return NewGCRA(c, p, 1, 100, o)
		}},
	} {
		t.Run(k.name, func(t *testing.T) {
			l, err := k.build(c, "cc-"+k.name, fake(new(testutil.Clock)))
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var admitted int64
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 70 {
						n := int64((i+g)%7) + 1
						dec, err := l.IncomingN(context.Background(), "k", n, true)
						if err != nil {
							t.Error(err)
							return
						}
						if dec.Allowed {
							mu.Lock()
							admitted += n
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if k.name == "count" && admitted > k.most || k.name != "count" && admitted != k.most {
				t.Errorf("admitted a cost of %d, want exactly %d (at most, for count)", admitted, k.most)
			}
		})
	}
}
