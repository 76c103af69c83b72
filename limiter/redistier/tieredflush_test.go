package redistier

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/clients"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
)

// activeTiered returns a Tiered of prefix over a fresh zone whose current
// window counts one request for each of n keys (client addresses), the
// windows' and the zone's clock being clk (a window of an hour, so that
// no window turns during a test). The zone's shards are large enough for
// the window's list of keys, which lives in one of them.
func activeTiered(t testing.TB, c redis.UniversalClient, clk *testutil.Clock, prefix string, n int, interval time.Duration, o Options) (*Tiered, *dict.Dict, []string) {
	t.Helper()
	d, _ := zonetest.Open(t, dict.Options{Size: max(16<<20, int64(n)*2<<10), Shards: 8, Clock: clk.UnixMilli})
	o.Now = clk.Now
	l, err := NewTiered(d, c, prefix, 1<<40, time.Hour, interval, o)
	if err != nil {
		t.Fatal(err)
	}
	keys := clients.Addrs(1, 0, n)
	ctx := context.Background()
	for _, k := range keys {
		if dec, err := l.Incoming(ctx, k, true); err != nil || !dec.Allowed {
			t.Fatalf("Incoming(%q) = %+v, %v", k, dec, err)
		}
	}
	return l, d, keys
}

// pipeHook counts a client's pipelines: its round trips (on a Cluster, one
// pipeline goes to every node at once).
type pipeHook struct{ pipes atomic.Int64 }

func (h *pipeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipes.Add(1)
		return next(ctx, cmds)
	}
}

// dial returns a new client of addrs, a cluster's or a server's, closed
// when the test ends.
func dial(t testing.TB, cluster bool, addrs []string) redis.UniversalClient {
	var c redis.UniversalClient
	if cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	} else {
		c = redis.NewClient(&redis.Options{Addr: addrs[0], ContextTimeoutEnabled: true, MaxRetries: -1})
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTieredFlushScale(t *testing.T) {
	r := testutil.StartRedis(t)
	testFlushScale(t, false, []string{r.Addr})
}

func TestTieredFlushScaleCluster(t *testing.T) {
	rc := testutil.StartRedisCluster(t, 3)
	t.Run("Slot", func(t *testing.T) { testSlot(t, rc.Addrs()[0]) })
	testFlushScale(t, true, rc.Addrs())
}

// testFlushScale flushes two hosts of n active keys each, for 10,000 and
// 100,000 keys, on one server or a cluster. A flush must go in few round
// trips (at most one per 512 keys, where it was one per key) and few
// script runs (on one server, exactly one per 256 keys); every key's count
// must reach the other host. How long a flush takes is
// BenchmarkTieredFlush's to measure, not this test's.
func testFlushScale(t *testing.T, cluster bool, addrs []string) {
	for _, n := range []int{10_000, 100_000} {
		t.Run(fmt.Sprintf("keys=%d", n), func(t *testing.T) {
			interval := time.Duration(n) * 40 * time.Microsecond
			clk := new(testutil.Clock)
			prefix := fmt.Sprintf("scale%d", n)
			h := &pipeHook{}
			ca := dial(t, cluster, addrs)
			ca.AddHook(h)
			a, _, keys := activeTiered(t, ca, clk, prefix, n, interval, Options{Timeout: callTimeout})
			b, _, _ := activeTiered(t, dial(t, cluster, addrs), clk, prefix, n, interval, Options{Timeout: callTimeout})
			ctx := context.Background()
			for _, k := range keys { // b counts 2 of each key, a 1
				incoming(t, b, k, true)
			}
			for _, l := range []*Tiered{a, b} {
				if ok, err := l.Flush(ctx); !ok || err != nil {
					t.Fatalf("Flush = %v, %v", ok, err)
				}
			}
			for _, addr := range addrs {
				if _, err := testutil.RedisDo(addr, "CONFIG", "RESETSTAT"); err != nil {
					t.Fatal(err)
				}
			}
			h.pipes.Store(0)
			const flushes = 3
			for range flushes {
				if ok, err := a.Flush(ctx); !ok || err != nil {
					t.Fatalf("Flush = %v, %v", ok, err)
				}
			}
			runs := roundTrips(t, addrs) // script runs, for all flushes
			pipes := h.pipes.Load()
			t.Logf("%d keys: %d round trips and %d script runs a flush", n, pipes/flushes, runs/flushes)
			if max := int64(flushes * (n/512 + 1)); pipes > max {
				t.Errorf("%d round trips in %d flushes of %d keys, want ≤ %d", pipes, flushes, n, max)
			}
			if !cluster {
				if want := int64(flushes * ((n + flushScriptKeys - 1) / flushScriptKeys)); runs != want {
					t.Errorf("%d script runs in %d flushes of %d keys, want %d", runs, flushes, n, want)
				}
			} else if runs > flushes*slots {
				t.Errorf("%d script runs in %d flushes, want at most one per slot", runs, flushes)
			}
			if _, err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			// Each host knows the other's count of every key: 1 + 2, and
			// the request asked about.
			for _, l := range []*Tiered{a, b} {
				for _, k := range keys {
					if d := incoming(t, l, k, false); d.Remaining != 1<<40-4 {
						t.Fatalf("Incoming(%q, false).Remaining = %d, want limit − 4", k, d.Remaining)
					}
				}
			}
		})
	}
}

// testSlot checks slot against CLUSTER KEYSLOT of a cluster node.
func testSlot(t *testing.T, addr string) {
	if got := slot("123456789"); got != 0x31C3 {
		t.Errorf("slot(123456789) = %#x, want 0x31c3 (CRC16 XMODEM's check value)", got)
	}
	keys := append(clients.Addrs(2, 0, 50),
		"", "{user1000}.following", "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}",
		"{}", "{", "}", "a{b", "tier:k:1763700", "\xff\xfe{\x00}")
	for _, k := range keys {
		want, err := testutil.RedisDo(addr, "CLUSTER", "KEYSLOT", k)
		if err != nil {
			t.Fatal(err)
		}
		if got := strconv.Itoa(slot(k)); got != want {
			t.Errorf("slot(%q) = %s, want %s", k, got, want)
		}
	}
}

// TestTieredBusyProcess runs a host with 10,000 active keys, an interval of
// 100 ms, Run flushing, and 64 goroutines deciding as fast as they can,
// here on one processor (GOMAXPROCS=1), so that the flusher competes with
// them for it.
// Redis is healthy: no decision may see it unavailable (the policy is
// FailError, so one would return ErrUnavailable), the flushes must go on
// (the test waits for 10 of them to complete while the deciders run), and
// once the deciders stop, a last flush must leave Redis with every request
// counted. The windows' clock runs at the real rate, as Run's ticker does,
// from a minute into an hour's window.
// The timeout of a round trip is a guard against a hang, not the default
// 100 ms. A machine busy with other work can hold back the flusher or the
// server past any short timeout. Timeouts that go on for the stale time
// then do make Redis look failed, by design.
func TestTieredBusyProcess(t *testing.T) {
	const (
		n, deciders = 10_000, 64
		interval    = 100 * time.Millisecond
		hang        = 5 * time.Minute // a guard against a flusher that never completes 10 flushes
	)
	_, c := newClient(t)
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: int64(n) * 2 << 10, Shards: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// The windows' clock runs at the real rate, a minute into a window.
	shift := time.Hour - time.Duration(time.Now().UnixNano()%int64(time.Hour)) + time.Minute
	now := func() time.Time { return time.Now().Add(shift) }
	l, err := NewTiered(d, c, "busy", 1<<40, time.Hour, interval, Options{Now: now, Timeout: hang})
	if err != nil {
		t.Fatal(err)
	}
	keys := clients.Addrs(3, 0, n)
	ctx := context.Background()
	for _, k := range keys {
		incoming(t, l, k, true)
	}
	if _, err := l.Flush(ctx); err != nil { // loads the script
		t.Fatal(err)
	}

	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); l.Run(runCtx) }()
	var (
		stop          atomic.Bool
		decided, errs atomic.Int64
		firstErr      atomic.Pointer[error]
		wg            sync.WaitGroup
	)
	for g := range deciders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := testutil.NewPicker(uint64(g) + 1)
			for !stop.Load() {
				dec, err := l.Incoming(ctx, keys[p.Next(n)], true)
				if err != nil || !dec.Allowed {
					if errs.Add(1) == 1 {
						err = fmt.Errorf("Incoming = %+v, %v", dec, err)
						firstErr.Store(&err)
					}
					continue
				}
				decided.Add(1)
			}
		}()
	}
	from := l.flushes.Load()
	start := time.Now()
	for l.flushes.Load() < from+11 && time.Since(start) < hang { // 10 complete, the 11th started
		time.Sleep(10 * time.Millisecond)
	}
	busy := time.Since(start)
	stop.Store(true)
	wg.Wait()
	stopRun()
	<-ran
	runtime.GOMAXPROCS(procs)

	s := l.Stats()
	t.Logf("%d decisions by %d goroutines in %v on one processor, %d flushes; Stats %+v",
		decided.Load(), deciders, busy.Round(time.Millisecond), l.flushes.Load()-from, s)
	if e := errs.Load(); e != 0 {
		t.Errorf("%d decisions failed or were rejected against a healthy Redis; the first: %v", e, *firstErr.Load())
	}
	if got := l.flushes.Load() - from; got < 11 {
		t.Errorf("%d flushes in %v while the deciders ran, want ≥ 10 complete", got, hang)
	}
	// A last flush carries every request to Redis.
	if _, err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	host, err := l.hostID()
	if err != nil {
		t.Fatal(err)
	}
	win := strconv.FormatInt(now().UnixMilli()/time.Hour.Milliseconds(), 10)
	pipe := c.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for i, k := range keys {
		cmds[i] = pipe.HGet(ctx, "busy:"+k+":"+win, host)
	}
	pipe.Exec(ctx)
	var total int64
	for i, cmd := range cmds {
		v, err := cmd.Int64()
		if err != nil {
			t.Fatalf("HGET busy:%s:%s %s: %v", keys[i], win, host, err)
		}
		total += v
	}
	if want := int64(n) + decided.Load(); total != want {
		t.Errorf("Redis counts %d requests, want %d", total, want)
	}
}

// stallHook, once armed, holds the next pipeline of script runs after Redis
// has answered it: a flusher that stalls between reading its answers and
// storing them.
// held is closed when it holds it; release lets it go on.
type stallHook struct {
	armed         atomic.Bool
	held, release chan struct{}
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if strings.HasPrefix(cmds[0].Name(), "eval") && h.armed.CompareAndSwap(true, false) {
			close(h.held)
			<-h.release
		}
		return err
	}
}

// stallPair is the setup of the stalled-flusher tests: a host's zone, on a
// fake clock, and two Tiered instances of it with limit 100 an hour over
// one Redis: a, whose client's script runs h can stall, and b.
type stallPair struct {
	r        *testutil.Redis
	clk      *testutil.Clock
	a, b     *Tiered
	h        *stallHook
	ca       redis.UniversalClient // a's client
	o        Options
	interval time.Duration
}

func newStallPair(t *testing.T, prefix string) stallPair {
	t.Helper()
	st := stallPair{r: testutil.StartRedis(t), clk: new(testutil.Clock), interval: 100 * time.Millisecond}
	clk := st.clk
	d, _ := zonetest.Open(t, dict.Options{Clock: clk.UnixMilli})
	st.o = Options{Timeout: callTimeout, Now: clk.Now}
	st.h = &stallHook{held: make(chan struct{}), release: make(chan struct{})}
	ca := dial(t, false, []string{st.r.Addr})
	ca.AddHook(st.h)
	st.ca = ca
	var err error
	if st.a, err = NewTiered(d, ca, prefix, 100, time.Hour, st.interval, st.o); err != nil {
		t.Fatal(err)
	}
	if st.b, err = NewTiered(d, dial(t, false, []string{st.r.Addr}), prefix, 100, time.Hour, st.interval, st.o); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTieredStalledFlusher stalls a flusher (a) after Redis answered it
// and until its lease has lapsed, while another process of the host (b)
// takes the lease over and flushes the newer total, another host (c)
// having counted more meanwhile. The stalled flusher must then store
// nothing: neither its older total over b's, nor Redis's health.
func TestTieredStalledFlusher(t *testing.T) {
	st := newStallPair(t, "stall")
	r, clk, a, b, h, o, interval := st.r, st.clk, st.a, st.b, st.h, st.o, st.interval
	c, _, _ := activeTiered(t, dial(t, false, []string{r.Addr}), clk, "stall", 0, interval, o)
	ctx := context.Background()
	count := func(l *Tiered, n int) {
		for range n {
			incoming(t, l, "k", true)
		}
	}
	count(a, 5) // the host's count, a's and b's zone
	count(c, 3) // the other host's
	if _, err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h.armed.Store(true)
	stalled := make(chan error, 1)
	go func() { _, err := a.Flush(ctx); stalled <- err }()
	<-h.held // a has read the other host's 3
	count(c, 4)
	if _, err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lease := 3*interval + callTimeout
	clk.Set(lease + time.Millisecond) // a's lease lapses
	if ok, err := b.Flush(ctx); !ok || err != nil {
		t.Fatalf("b.Flush = %v, %v; want it to take the lapsed lease over", ok, err)
	}
	health, err := b.intAt(b.hk)
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(lease + 50*time.Millisecond) // a would stamp a later time
	close(h.release)
	if err := <-stalled; err != nil {
		t.Fatalf("stalled a.Flush: %v", err)
	}
	// 100 − other hosts' 7 − the host's 5 − this request.
	if dec := incoming(t, b, "k", false); dec.Remaining != 87 {
		t.Errorf("after the stalled flusher went on: Remaining %d, want 87 (other hosts 7, as b read them, not 3)", dec.Remaining)
	}
	if got, err := b.intAt(b.hk); err != nil || got != health {
		t.Errorf("health after the stalled flusher went on = %v, %v; want %v, as b left it", got, err, health)
	}
}

// TestTieredStalledFlusherBadKey stalls a flusher (a) after Redis answered
// that a key's hash holds a bad state, and until its lease has lapsed;
// meanwhile the bad value is deleted and another process of the host (b)
// takes the lease over and reads the key's good state. The stalled flusher
// must not mark the key bad then: the key decides on b's reading.
func TestTieredStalledFlusherBadKey(t *testing.T) {
	st := newStallPair(t, "stallbad")
	r, clk, a, b, h, ca, interval := st.r, st.clk, st.a, st.b, st.h, st.ca, st.interval
	ctx := context.Background()
	for range 5 {
		incoming(t, a, "k", true)
	}
	rk := "stallbad:k:" + strconv.FormatInt(clk.Now().UnixMilli()/time.Hour.Milliseconds(), 10)
	if _, err := testutil.RedisDo(r.Addr, "HSET", rk, "7", "x"); err != nil {
		t.Fatal(err)
	}
	// Loaded, so that the pipeline held is the one that reads the state
	// (not one whose EVALSHA Redis refuses, run again after the stall).
	if err := tieredScript.Load(ctx, ca).Err(); err != nil {
		t.Fatal(err)
	}
	h.armed.Store(true)
	stalled := make(chan error, 1)
	go func() { _, err := a.Flush(ctx); stalled <- err }()
	<-h.held // a has read the bad state
	if _, err := testutil.RedisDo(r.Addr, "DEL", rk); err != nil {
		t.Fatal(err)
	}
	clk.Set(3*interval + callTimeout + time.Millisecond) // a's lease lapses
	if ok, err := b.Flush(ctx); !ok || err != nil {
		t.Fatalf("b.Flush = %v, %v; want it to take the lapsed lease over and read a good state", ok, err)
	}
	close(h.release)
	if err := <-stalled; err != nil && !errors.Is(err, ErrBadState) {
		t.Fatalf("stalled a.Flush: %v", err)
	}
	// 100 − other hosts' 0 − the host's 5 − this request.
	dec, err := b.Incoming(ctx, "k", false)
	if err != nil || dec.Remaining != 94 {
		t.Errorf("after the stalled flusher went on: Incoming(k) = %+v, %v; want Remaining 94, as b read it", dec, err)
	}
}

// TestTieredNothingToSend checks that a flush with nothing to send does not
// count as Redis answering: once Redis, killed, is failed for the host, a
// flush after the windows turned (no key counted: the policy decides) leaves
// it failed, and once Redis is back the same flush, which then asks it for a
// PING, returns the host to normal.
func TestTieredNothingToSend(t *testing.T) {
	const (
		interval = 20 * time.Millisecond
		window   = time.Second
	)
	r, c, _ := newFaultClient(t, faultTimeout)
	d, clk := zonetest.Open(t, dict.Options{})
	l, err := NewTiered(d, c, "idle", 100, window, interval, Options{Timeout: faultTimeout, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	incoming(t, l, "k", true)
	if _, err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failed := func() bool {
		_, err := l.Incoming(ctx, "k", false)
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatal(err)
		}
		return err != nil
	}
	r.Kill()
	// Flushes fail until Redis is failed: two in a row, over 5 intervals
	// and the timeout of real time. The guard is against a hang.
	for start := time.Now(); !failed(); {
		if _, err := l.Flush(ctx); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Flush with Redis killed = %v, want ErrUnavailable", err)
		}
		if time.Since(start) > faultHang {
			t.Fatalf("Redis not failed for the host %v after it was killed", faultHang)
		}
	}
	clk.Set(2 * window) // the keys counted expired: nothing to send
	calls := l.Stats().Calls
	if ok, err := l.Flush(ctx); !ok || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Flush with nothing to send, Redis killed = %v, %v; want true, ErrUnavailable", ok, err)
	}
	if !failed() {
		t.Fatal("a flush with nothing to send returned the host to normal while Redis was down")
	}
	r.Restart()
	if ok, err := l.Flush(ctx); !ok || err != nil {
		t.Fatalf("Flush with nothing to send, Redis back = %v, %v", ok, err)
	}
	if failed() {
		t.Fatal("Redis answers again, and the host still considers it failed")
	}
	if s := l.Stats(); s.Calls != calls {
		t.Errorf("flushes with nothing to send ran %d scripts", s.Calls-calls)
	}
}

// TestTieredFlushBadKey puts, among 600 keys of one flush (three script
// runs), keys whose Redis value no flush writes: a string, and hashes with
// a count or a sequence number that is not an integer written as Lua writes
// it and holds exactly, a field that names no host, a total beyond 2^53
// (of other hosts' counts, or with the host's own), a reset marker that is
// not a positive integer. Each must fail alone
// (ErrBadState, the key left as it is, its decisions ErrBadState), every
// other key's count must reach Redis and its decisions go on, and Redis,
// which answered, must not be taken for failed.
func TestTieredFlushBadKey(t *testing.T) {
	r, c := newClient(t)
	clk := new(testutil.Clock)
	l, _, keys := activeTiered(t, c, clk, "bad", 600, 100*time.Millisecond, Options{Timeout: callTimeout})
	win := strconv.FormatInt(clk.Now().UnixMilli()/time.Hour.Milliseconds(), 10)
	rk := func(k string) string { return "bad:" + k + ":" + win }
	host, err := l.hostID()
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]string{
		keys[0]:   {"SET", rk(keys[0]), "7"},
		keys[1]:   {"HSET", rk(keys[1]), "7", "x"},
		keys[300]: {"HSET", rk(keys[300]), "7", "1e308"},
		keys[599]: {"HSET", rk(keys[599]), "7", "2", "7:s", "inf"},
		keys[2]:   {"HSET", rk(keys[2]), "7", "05"},
		keys[3]:   {"HSET", rk(keys[3]), "7", "1e3"},
		keys[4]:   {"HSET", rk(keys[4]), "x", "1"},
		keys[5]:   {"HSET", rk(keys[5]), "7", "9007199254740992", "8", "9007199254740992"},
		keys[6]:   {"HSET", rk(keys[6]), host, "9007199254740992", "7", "2"},
		keys[7]:   {"HSET", rk(keys[7]), "7", "2", "reset", "x"},
		keys[8]:   {"HSET", rk(keys[8]), "reset", "0"},
		keys[9]:   {"HSET", rk(keys[9]), "reset", "-1"},
	}
	for _, cmd := range bad {
		if _, err := testutil.RedisDo(r.Addr, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	_, err = l.Flush(ctx)
	if !errors.Is(err, ErrBadState) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Flush = %v, want ErrBadState and not ErrUnavailable", err)
	}
	if err := l.health(clk.Now().UnixMilli()); err != nil {
		t.Errorf("health after a flush Redis answered = %v, want nil", err)
	}
	for _, k := range keys {
		dec, err := l.Incoming(ctx, k, true)
		if _, ok := bad[k]; ok {
			if !errors.Is(err, ErrBadState) || dec != (limiter.Decision{}) {
				t.Errorf("Incoming(%s) after the flush = %+v, %v; want ErrBadState and no decision", k, dec, err)
			}
		} else if err != nil || !dec.Allowed {
			t.Errorf("Incoming(%s) after the flush = %+v, %v; want allowed", k, dec, err)
		}
	}
	for _, k := range keys {
		if cmd, ok := bad[k]; ok {
			typ, _ := testutil.RedisDo(r.Addr, "TYPE", rk(k))
			n, _ := testutil.RedisDo(r.Addr, "HLEN", rk(k))
			if want := map[string]string{"SET": "string", "HSET": "hash"}[cmd[0]]; typ != want || (typ == "hash" && n != strconv.Itoa(len(cmd)/2-1)) {
				t.Errorf("%s holds a %s of %s fields after the flush, want it as it was (%q)", rk(k), typ, n, cmd)
			}
			continue
		}
		if got, err := testutil.RedisDo(r.Addr, "HGET", rk(k), host); err != nil || got != "1" {
			t.Fatalf("HGET %s %s = %q, %v; want 1", rk(k), host, got, err)
		}
	}
}

// TestTieredSequenceEvicted: the zone evicts the host's flush sequence
// (here deleted) between two flushes of a window. The next flush's number
// must still be above the one Redis keeps for each key, or Redis refuses
// the host's counts for the rest of the window.
func TestTieredSequenceEvicted(t *testing.T) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	const interval = 100 * time.Millisecond
	l, d, keys := activeTiered(t, c, clk, "seqev", 3, interval, Options{Timeout: callTimeout})
	ctx := context.Background()
	win := clk.Now().UnixMilli() / time.Hour.Milliseconds()
	for f := 1; f <= 3; f++ {
		clk.Set(time.Duration(f) * interval)
		if f == 3 {
			if err := d.Delete("tier|seqev|seq"); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			incoming(t, l, k, true)
		}
		if _, err := l.Flush(ctx); err != nil {
			t.Fatalf("flush %d: %v", f, err)
		}
		host, _, err := d.Get("tier|seqev|host")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got, err := c.HGet(ctx, fmt.Sprintf("seqev:%s:%d", k, win), strconv.FormatInt(host.Int(), 10)).Result()
			if want := strconv.Itoa(f + 1); err != nil || got != want {
				t.Errorf("flush %d: Redis holds the host's count of %s as %q, %v; want %s", f, k, got, err, want)
			}
		}
	}
}
