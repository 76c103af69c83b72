package redistier

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// resetLimit and resetWindow are the limit and window of the hosts of the
// reset tests.
const (
	resetLimit  = 10
	resetWindow = time.Hour
)

// resetHosts returns n Tiered limiters of prefix on c, each counting in a
// zone of its own: n hosts sharing one Redis. clk is the clock of their
// windows and zones.
func resetHosts(t *testing.T, c redis.UniversalClient, clk *testutil.Clock, prefix string, n int) []*Tiered {
	t.Helper()
	var hs []*Tiered
	for range n {
		d, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
		l, err := NewTiered(d, c, prefix, resetLimit, resetWindow, 100*time.Millisecond, fake(clk))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, l)
	}
	return hs
}

var hostField = regexp.MustCompile(`^[0-9]+$`)

// globalCount returns the sum of the hosts' counts of key in its Redis
// hash of the current window, and the hash's reset marker ("" for none).
func globalCount(t *testing.T, c redis.UniversalClient, clk *testutil.Clock, prefix, key string) (int64, string) {
	t.Helper()
	h, err := c.HGetAll(context.Background(), resetRedisKey(clk, prefix, key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for f, v := range h {
		if hostField.MatchString(f) {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("field %s = %q", f, v)
			}
			n += x
		}
	}
	return n, h["reset"]
}

func resetRedisKey(clk *testutil.Clock, prefix, key string) string {
	return fmt.Sprintf("%s:%s:%d", prefix, key, clk.Now().UnixMilli()/resetWindow.Milliseconds())
}

// charge charges n to key on host h and fails the test on an error.
func charge(t *testing.T, h *Tiered, key string, n int64) {
	t.Helper()
	if _, err := h.IncomingN(context.Background(), key, n, true); err != nil {
		t.Fatalf("IncomingN(%q, %d): %v", key, n, err)
	}
}

// flushAll flushes every host in turn, then the first once more, so that
// each reads the others' counts.
func flushAll(t *testing.T, hs ...*Tiered) {
	t.Helper()
	for _, h := range append(hs, hs[0]) {
		if _, err := h.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

// checkSees fails the test unless every host of hs decides on key as with
// used of the limit counted: a dry run leaves limit − used − 1.
func checkSees(t *testing.T, phase, key string, used int64, hs ...*Tiered) {
	t.Helper()
	for i, h := range hs {
		d := incoming(t, h, key, false)
		if want := resetLimit - used - 1; !d.Allowed || d.Remaining != want {
			t.Errorf("%s: hs[%d]: Incoming(%q, dry run) = %+v, want allowed, %d left", phase, i, key, d, want)
		}
	}
}

func TestTieredReset(t *testing.T) {
	_, c := newClient(t)
	testTieredReset(t, c)
}

// testTieredReset: two hosts count a key, one resets it, both flush. The
// global count is 0 and each host decides as on a fresh key, whichever
// host reset, whether or not the hosts had flushed before, and with
// requests counted on the other host since its last flush. Requests after
// the reset count on both hosts.
func testTieredReset(t *testing.T, c redis.UniversalClient) {
	for i, tc := range []struct {
		name    string
		flushed bool // the hosts flushed their counts before the reset
		since   bool // the other host counted more since its last flush
		by      int  // the host that resets: 0 or 1
	}{
		{name: "flushed", flushed: true},
		{name: "unflushed"},
		{name: "flushed, counted since", flushed: true, since: true},
		{name: "by the other host", flushed: true, by: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			prefix := "rst" + strconv.Itoa(i)
			hs := resetHosts(t, c, clk, prefix, 2)
			charge(t, hs[0], "k", 4)
			charge(t, hs[1], "k", 3)
			if tc.flushed {
				flushAll(t, hs...)
				checkSees(t, "before the reset", "k", 7, hs...)
			}
			if tc.since {
				charge(t, hs[1-tc.by], "k", 2)
			}
			clk.Set(time.Second)
			if err := hs[tc.by].Reset(context.Background(), "k"); err != nil {
				t.Fatal(err)
			}
			checkSees(t, "the resetting host at once", "k", 0, hs[tc.by])
			clk.Set(time.Second + 100*time.Millisecond)
			flushAll(t, hs...)
			if n, m := globalCount(t, c, clk, prefix, "k"); n != 0 || m == "" {
				t.Errorf("after the reset and a flush of each host: global count %d, marker %q; want 0 and a marker", n, m)
			}
			checkSees(t, "after a flush of each host", "k", 0, hs...)
			charge(t, hs[0], "k", 2)
			charge(t, hs[1], "k", 3)
			clk.Set(time.Second + 200*time.Millisecond)
			flushAll(t, hs...)
			if n, _ := globalCount(t, c, clk, prefix, "k"); n != 5 {
				t.Errorf("requests after the reset: global count %d, want 5", n)
			}
			checkSees(t, "requests after the reset", "k", 5, hs...)
		})
	}
}

// TestTieredResetLost: what a reset takes from the hosts that learn of it
// at their next flush. Requests that a host decided after the reset but
// before that flush are lost. A host whose first request of the key comes
// after the reset keeps its count when a flush of its ran after the reset,
// and loses it otherwise, since it cannot tell. The markers of the last two
// cases are written by hand: a reset long before the host's flush, and one
// after it.
func TestTieredResetLost(t *testing.T) {
	_, c := newClient(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name string
		// set up counts key "k" on the second host around a reset, and
		// returns the count it keeps.
		set func(t *testing.T, clk *testutil.Clock, prefix string, hs []*Tiered) int64
	}{
		{"counted before it learned", func(t *testing.T, clk *testutil.Clock, prefix string, hs []*Tiered) int64 {
			charge(t, hs[1], "k", 3)
			if err := hs[0].Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			charge(t, hs[1], "k", 2) // after the reset, before the flush
			return 0
		}},
		{"first request after a flush after the reset", func(t *testing.T, clk *testutil.Clock, prefix string, hs []*Tiered) int64 {
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			setMarker(t, c, clk, prefix, now.Add(-time.Minute).UnixMilli())
			charge(t, hs[1], "other", 1)
			if _, err := hs[1].Flush(ctx); err != nil {
				t.Fatal(err)
			}
			charge(t, hs[1], "k", 3)
			return 3
		}},
		{"first request before a flush after the reset", func(t *testing.T, clk *testutil.Clock, prefix string, hs []*Tiered) int64 {
			charge(t, hs[1], "other", 1)
			if _, err := hs[1].Flush(ctx); err != nil {
				t.Fatal(err)
			}
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			setMarker(t, c, clk, prefix, now.Add(time.Minute).UnixMilli())
			charge(t, hs[1], "k", 3)
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(testutil.Clock)
			prefix := "rlost" + strconv.Itoa(i)
			hs := resetHosts(t, c, clk, prefix, 2)
			want := tc.set(t, clk, prefix, hs)
			clk.Set(100 * time.Millisecond)
			flushAll(t, hs...)
			if n, _ := globalCount(t, c, clk, prefix, "k"); n != want {
				t.Errorf("global count %d, want %d", n, want)
			}
			checkSees(t, "the second host, after the flushes", "k", want, hs[1])
		})
	}
}

// setMarker writes a reset marker in key "k"'s hash of prefix, as Reset
// does.
func setMarker(t *testing.T, c redis.UniversalClient, clk *testutil.Clock, prefix string, marker int64) {
	t.Helper()
	rk := resetRedisKey(clk, prefix, "k")
	if err := c.HSet(context.Background(), rk, "reset", strconv.FormatInt(marker, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(context.Background(), rk, 2*resetWindow).Err(); err != nil {
		t.Fatal(err)
	}
}

// replayHook records the commands of a client's flush pipelines and, while
// twice is set, sends each pipeline twice, as a client that retries a
// round trip Redis ran would.
type replayHook struct {
	twice atomic.Bool
	mu    sync.Mutex
	last  [][]any // the last pipeline's commands
}

func (h *replayHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *replayHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *replayHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if strings.HasPrefix(cmds[0].Name(), "eval") { // not the connection's setup
			h.mu.Lock()
			h.last = h.last[:0]
			for _, cmd := range cmds {
				h.last = append(h.last, cmd.Args())
			}
			h.mu.Unlock()
		}
		if err := next(ctx, cmds); err != nil || !h.twice.Load() {
			return err
		}
		return next(ctx, cmds)
	}
}

// TestTieredResetRetried: after a reset, a host's flushes run twice on the
// server count once, the one that learns of the reset included; and a
// flush sent before the reset that runs again after it (a round trip that
// timed out on the host's side) counts nothing.
func TestTieredResetRetried(t *testing.T) {
	r := testutil.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	h := &replayHook{}
	c2 := redis.NewClient(&redis.Options{Addr: r.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	c2.AddHook(h)
	t.Cleanup(func() { c2.Close() })
	clk := new(testutil.Clock)
	const prefix = "rretry"
	h1 := resetHosts(t, c, clk, prefix, 1)[0]
	h2 := resetHosts(t, c2, clk, prefix, 1)[0]
	ctx := context.Background()
	charge(t, h1, "k", 1)
	charge(t, h2, "k", 4)
	flushAll(t, h1, h2)
	h.mu.Lock()
	before := append([][]any(nil), h.last...) // h2's flush before the reset
	h.mu.Unlock()
	if err := h1.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	h.twice.Store(true)
	for step := 1; step <= 3; step++ {
		clk.Set(time.Duration(step) * 100 * time.Millisecond)
		if step == 2 {
			charge(t, h2, "k", 3)
		}
		flushAll(t, h1, h2)
		if n, _ := globalCount(t, c, clk, prefix, "k"); n != map[int]int64{1: 0, 2: 3, 3: 3}[step] {
			t.Errorf("flush %d, each run twice: global count %d, want %d", step, n, map[int]int64{1: 0, 2: 3, 3: 3}[step])
		}
	}
	for _, args := range before {
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args[0], err)
		}
	}
	if n, _ := globalCount(t, c, clk, prefix, "k"); n != 3 {
		t.Errorf("after a flush from before the reset ran again: global count %d, want 3", n)
	}
	checkSees(t, "at the end", "k", 3, h1, h2)
}

// TestTieredResetHash: Reset keeps the hash's TTL, gives a new hash two
// windows, raises the marker above the last one even within a ms, and
// replaces a state no flush writes, after which the key decides again. A
// marker that is not a positive integer as Lua prints it is a bad state.
func TestTieredResetHash(t *testing.T) {
	r, c := newClient(t)
	ctx := context.Background()
	clk := new(testutil.Clock)
	const prefix = "rhash"
	l := resetHosts(t, c, clk, prefix, 1)[0]
	rk := resetRedisKey(clk, prefix, "k")
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, rk).Val(); ttl <= resetWindow || ttl > 2*resetWindow {
		t.Errorf("PTTL of a hash Reset created = %v, want about two windows", ttl)
	}
	if err := c.PExpire(ctx, rk, time.Hour+time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, m1 := globalCount(t, c, clk, prefix, "k")
	if err := c.HSet(ctx, rk, "reset", "9007199254740000").Err(); err != nil { // a marker ahead of TIME
		t.Fatal(err)
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, rk).Val(); ttl <= time.Hour || ttl > time.Hour+time.Minute {
		t.Errorf("PTTL after a second Reset = %v, want the hash's, at most 1h1m", ttl)
	}
	if _, m2 := globalCount(t, c, clk, prefix, "k"); m1 == "" || m2 != "9007199254740001" {
		t.Errorf("markers %q, then %q after one ahead of TIME; want one more than it", m1, m2)
	}
	for _, hostile := range [][]string{
		{"HSET", rk, "reset", "x"},
		{"HSET", rk, "reset", "0"},
		{"HSET", rk, "reset", "1.5"},
		{"HSET", rk, "reset", "-3"},
		{"SET", rk, "7"},
	} {
		c.Del(ctx, rk)
		if _, err := testutil.RedisDo(r.Addr, hostile...); err != nil {
			t.Fatal(err)
		}
		charge(t, l, "k", 1)
		if _, err := l.Flush(ctx); !errors.Is(err, ErrBadState) {
			t.Errorf("%q: Flush = %v, want ErrBadState", hostile, err)
		}
		if _, err := l.Incoming(ctx, "k", false); !errors.Is(err, ErrBadState) {
			t.Errorf("%q: Incoming = %v, want ErrBadState", hostile, err)
		}
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatalf("%q: Reset = %v", hostile, err)
		}
		if _, err := l.Flush(ctx); err != nil {
			t.Errorf("%q: Flush after Reset = %v", hostile, err)
		}
		checkSees(t, fmt.Sprintf("%q, after Reset", hostile), "k", 0, l)
	}
}
