package redistier

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// tieredScript records a host's count of a key in one window and returns
// the total of every host. The Redis key is a hash: per host its count and
// the sequence number of the flush that wrote it, so that a flush that timed
// out on the caller's side but ran later, or runs twice, never counts twice
// nor overwrites a newer count. The key expires two windows after it opened.
// KEYS[1] prefix:key:window; ARGV host, seq, count, ttl_ms. Reply {total of
// every host, this host's count}.
var tieredScript = redis.NewScript(luaState + `
tieredState(KEYS[1])
local seqf = ARGV[1] .. ':s'
local seq = tonumber(redis.call('HGET', KEYS[1], seqf)) or -1
if tonumber(ARGV[2]) > seq then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], seqf, ARGV[2])
end
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
local all, total = redis.call('HGETALL', KEYS[1]), 0
for i = 1, #all, 2 do
  if not string.find(all[i], ':', 1, true) then total = total + tonumber(all[i + 1]) end
end
return {total, tonumber(redis.call('HGET', KEYS[1], ARGV[1]))}
`)

// Tiered is a global limit of limit requests per fixed window across hosts,
// at a fraction of the Redis traffic of a Redis limiter. Decisions never
// wait for Redis: the processes of a host count in the host's zone (one
// dict shared by them), and one process per host at a time, the holder of a
// lease in the zone, flushes the host's count of each key to Redis every
// interval and reads back the global count (one script run per key).
//
// A host admits a request when the other hosts' counts it last read, plus
// its own count, stay within limit, so it never rejects below the global
// limit it knows of. It does not see other hosts' requests
// of the last interval or two (theirs not yet flushed, and those flushed
// since it read), so in a window the hosts together admit at most
//
//	limit + 2 · hosts · rate · interval
//
// where rate is the most requests per second one host admits; with flushes
// spread over the interval the overshoot is about hosts · rate · interval.
// Redis load: one round trip per host per key per interval (plus one per
// host and key at a window's end for the last requests), whatever the request
// rate. A flush writes the host's whole count of the window with a sequence
// number, not a delta, so a flush that timed out but ran later, or a server
// that restarted empty, never leaves the global count wrong beyond the next
// flush.
//
// Failure. Decisions never call Redis, so each returns in the time of a few
// zone operations, whatever Redis does. The host considers Redis failed when
// its last flush could not reach it (ErrUnavailable on a key: the flush stops
// there, so a hung server costs it one timeout, not one per key), or when no
// flush has succeeded for 5 intervals plus the timeout (no process of the
// host flushes: the lease of a flusher that died passes on after 3
// intervals). Until then, while a flush is failing for the first time, the
// host decides on its last global count. While Redis is failed, Incoming
// decides by Options.OnFailure as the other limiters do: FailError returns
// ErrUnavailable with a rejecting zero Decision; FailOpen allows, counting
// nothing; FailClosed rejects with RetryAfter set to the timeout; FailLocal
// returns Options.Local's decision. Every fallback is counted in Stats, whose
// Calls and Errors count this instance's flushes' script runs. Processes keep
// flushing the counts the host had, and the first flush that succeeds
// returns the host to normal: requests admitted meanwhile by FailOpen or
// FailLocal are not in the global count. A host that has not flushed yet is
// not failed.
type Tiered struct {
	base
	d                *dict.Dict
	limit            int64
	window, interval int64  // ms
	id               int64  // this instance's lease id, unique on the host
	zp               string // zone key prefix "tier|prefix|"
	hk               string // zone key of the host's Redis health, zp+"ok"
	stale            int64  // ms without a good flush after which Redis is failed
	flushes          atomic.Uint64
	wp               atomic.Pointer[winPrefix] // the current window's key prefix
}

// winPrefix is a window's zone key prefix "tier|prefix|win|", kept so that
// a decision builds its keys with one allocation.
type winPrefix struct {
	win int64
	s   string
}

var tieredSeq atomic.Int64

// NewTiered returns a tiered limiter of limit requests per window across
// every host that uses the same c and prefix, each host counting in d.
// Every process of a host calls Flush every interval (Run does), or the
// host never learns the global count. Options.Timeout bounds each flush;
// Options.Now is the clock of the windows (the hosts' clocks should agree
// to well within a window); OnFailure and Local apply while Redis is failed
// (see Tiered); Clock is not used.
// The host's zone keys are "tier|prefix|…", a namespace of their own
// beside the local limiters' (package limiter's names), so prefix must be
// a limiter name (limiter.CheckName).
// Errors: ErrNilClient, ErrNoContextTimeout, ErrNoLocal, limiter.ErrNilDict,
// limiter.ErrBadName, limiter.ErrBadLimit, limiter.ErrBadWindow for a window
// or interval below 1 ms or an interval longer than the window.
func NewTiered(d *dict.Dict, c redis.UniversalClient, prefix string, limit int64, window, interval time.Duration, o Options) (*Tiered, error) {
	if d == nil {
		return nil, limiter.ErrNilDict
	}
	if err := limiter.CheckName(prefix); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadLimit, limit)
	}
	if interval < time.Millisecond || window < interval {
		return nil, fmt.Errorf("%w: window %v, interval %v", limiter.ErrBadWindow, window, interval)
	}
	o.Clock = CallerClock
	l := &Tiered{
		d: d, limit: limit, window: window.Milliseconds(), interval: interval.Milliseconds(),
		id: int64(os.Getpid())<<20 | tieredSeq.Add(1)&(1<<20-1),
		zp: "tier|" + prefix + "|",
	}
	l.hk = l.zp + "ok"
	if err := l.init(c, prefix, o, false); err != nil {
		return nil, err
	}
	l.stale = 5*l.interval + l.o.Timeout.Milliseconds()
	return l, nil
}

// Zone keys, per window: "tier|prefix|win|key|c" the host's count, "|c|o"
// the other hosts' count last read (named so that the count's key is a
// prefix of it), "|f" the count last flushed, "|m" a marker that the key is
// listed in "tier|prefix|win|keys"; all expire two windows on. Per host:
// "tier|prefix|host" the host's id in Redis, "|seq" the flush sequence,
// "|lease" the flusher's lease, "|ok" Redis's health: the time in ms of the
// last flush that succeeded, negated when the last flush failed.
func (l *Tiered) zkey(win int64, key, suffix string) string {
	p := l.wp.Load()
	if p == nil || p.win != win {
		p = &winPrefix{win, l.zp + strconv.FormatInt(win, 10) + "|"}
		l.wp.Store(p)
	}
	return p.s + key + suffix
}

// Incoming decides on a request for key in the host's zone, without Redis.
// State and Remaining are the allowance left as this host knows it;
// RetryAfter on a rejection is the time to the window's end. While Redis is
// failed the failure policy decides (see Tiered). Errors: ErrBadKey,
// ErrBadState while the key's Redis hash holds a state no Tiered writes (its
// last flush said so), or the zone does under its keys, ErrUnavailable under
// FailError, the dictionary's, Options.Local's.
func (l *Tiered) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	if key == "" {
		return limiter.Decision{}, ErrBadKey
	}
	now := l.o.Now().UnixMilli()
	if err := l.health(now); err != nil {
		return l.fail(ctx, key, commit, err)
	}
	win := now / l.window
	ttl := time.Duration(2*l.window) * time.Millisecond
	ok := l.zkey(win, key, "|c|o")
	g, err := l.intAt(ok)
	if err != nil {
		return limiter.Decision{}, err
	}
	dk := ok[:len(ok)-2] // "…|c"
	var n int64
	if commit {
		if n, _, err = l.d.IncrInit(dk, 1, 0, ttl); err != nil {
			return limiter.Decision{}, zoneErr(key, err)
		}
		if err := l.checkCount(dk, n); err != nil {
			return limiter.Decision{}, err
		}
		if n == 1 {
			if err := l.list(win, key, ttl); err != nil {
				return limiter.Decision{}, err
			}
		}
	} else {
		if n, err = l.intAt(dk); err != nil {
			return limiter.Decision{}, err
		}
		n++
	}
	left := l.limit - g - n
	reset := ms((win+1)*l.window - now)
	d := limiter.Decision{State: float64(left), ResetAfter: reset}
	if left < 0 {
		if commit {
			if _, err := l.d.Incr(dk, -1); err != nil {
				return limiter.Decision{}, fmt.Errorf("redistier: tiered %s: %w", key, err)
			}
		}
		d.RetryAfter = reset
		return d, nil
	}
	d.Allowed, d.Committed, d.Remaining = true, commit, left
	return d, nil
}

// health returns nil while the host considers Redis reachable, an error
// wrapping ErrUnavailable when it considers it failed, or the dictionary's.
func (l *Tiered) health(now int64) error {
	ok, err := l.intAt(l.hk)
	switch {
	case err != nil:
		return err
	case ok < 0:
		return fmt.Errorf("%w: tiered %s: the last flush failed", ErrUnavailable, l.prefix)
	case ok > 0 && now-ok > l.stale:
		return fmt.Errorf("%w: tiered %s: no flush for %d ms", ErrUnavailable, l.prefix, now-ok)
	}
	return nil
}

// list adds key to its window's list of keys to flush, once per window.
func (l *Tiered) list(win int64, key string, ttl time.Duration) error {
	_, err := l.d.Add(l.zkey(win, key, "|m"), dict.Int(1), ttl, 0)
	if errors.Is(err, dict.ErrExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	lk := l.zkey(win, "keys", "")
	n, err := l.d.RPush(lk, dict.String(key))
	if err == nil && n == 1 {
		err = l.d.Expire(lk, ttl)
	}
	if err != nil {
		return fmt.Errorf("redistier: tiered key list: %w", err)
	}
	return nil
}

// intAt reads an int of the zone, 0 when absent.
func (l *Tiered) intAt(k string) (int64, error) {
	v, _, err := l.d.Get(k)
	if errors.Is(err, dict.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, zoneErr(k, err)
	}
	if v.Kind() != dict.KindInt {
		return 0, zoneValueErr(k, v)
	}
	return v.Int(), nil
}

// Uncommit gives one request back to this host's count of key's current
// window; the next flush carries it. While Redis is failed and the policy is
// FailLocal, it gives it back to Options.Local instead.
// Errors: ErrBadKey, the dictionary's, Options.Local's.
func (l *Tiered) Uncommit(ctx context.Context, key string) error {
	if key == "" {
		return ErrBadKey
	}
	now := l.o.Now().UnixMilli()
	if err := l.health(now); errors.Is(err, ErrUnavailable) && l.o.OnFailure == FailLocal {
		return l.failUncommit(ctx, key, err)
	}
	win := now / l.window
	if _, err := l.d.Incr(l.zkey(win, key, "|c"), -1); err != nil && !errors.Is(err, dict.ErrNotFound) {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
}

// Flush takes or renews the host's flusher lease and, when this instance
// holds it, flushes the count of every key of the current window (and the
// rest of the previous window's) to Redis, reading back each global count.
// It reports whether this instance flushed. A key whose flush fails keeps its
// count for the next flush. When Redis cannot be reached (ErrUnavailable)
// Flush stops and marks Redis failed for the host; otherwise it goes on with
// the other keys and returns the first error. A flush without error marks
// Redis reachable, and so does one whose only errors are ErrBadState: Redis
// answered, and each key whose hash holds a state no Tiered writes is marked
// so in the zone, for its decisions to return ErrBadState until a flush
// reads a good state.
func (l *Tiered) Flush(ctx context.Context) (bool, error) {
	leaseKey, lease := l.zp+"lease", time.Duration(3*l.interval)*time.Millisecond
	_, err := l.d.Add(leaseKey, dict.Int(l.id), lease, 0)
	if errors.Is(err, dict.ErrExists) {
		var mine bool
		mine, err = l.d.CompareAndSwap(leaseKey, dict.Int(l.id), dict.Int(l.id), lease)
		if err == nil && !mine {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	}
	host, err := l.hostID()
	if err != nil {
		return false, err
	}
	l.flushes.Add(1)
	now := l.o.Now().UnixMilli()
	win := now / l.window
	err = l.flushWindow(ctx, host, win-1, false)
	if !errors.Is(err, ErrUnavailable) {
		err = errors.Join(err, l.flushWindow(ctx, host, win, true))
	}
	switch {
	case errors.Is(err, ErrUnavailable):
		now = -now
	case err != nil && !errors.Is(err, ErrBadState): // Redis answered a bad state
		return true, err
	}
	if _, serr := l.d.Set(l.hk, dict.Int(now), 0, 0); serr != nil {
		err = errors.Join(err, fmt.Errorf("redistier: tiered health: %w", serr))
	}
	return true, err
}

// flushWindow flushes the keys listed for window win. The current window's
// keys are flushed every time and stay listed; the previous window's are
// flushed once more only when their count changed, then dropped.
func (l *Tiered) flushWindow(ctx context.Context, host string, win int64, current bool) error {
	lk := l.zkey(win, "keys", "")
	n, err := l.d.LLen(lk)
	if err != nil && !errors.Is(err, dict.ErrNotFound) {
		return fmt.Errorf("redistier: tiered key list: %w", err)
	}
	var first error
	for i := 0; i < n; i++ {
		v, err := l.d.LPop(lk)
		if err != nil {
			break // expired meanwhile
		}
		key := v.String()
		err = l.flushKey(ctx, host, win, key, current)
		if err != nil && first == nil {
			first = err
		}
		if current || err != nil {
			if _, err := l.d.RPush(lk, v); err != nil && first == nil {
				first = err
			}
		}
		if errors.Is(err, ErrUnavailable) {
			break // the keys not popped stay listed
		}
	}
	return first
}

// flushKey writes the host's count of key to Redis and stores the other
// hosts' count it reads back. The previous window's keys are written only
// when their count changed since the last flush.
func (l *Tiered) flushKey(ctx context.Context, host string, win int64, key string, current bool) error {
	n, err := l.intAt(l.zkey(win, key, "|c"))
	if err != nil {
		return err
	}
	fk := l.zkey(win, key, "|f")
	if !current {
		if f, err := l.intAt(fk); err != nil || f == n {
			return err
		}
	}
	seq, _, err := l.d.IncrInit(l.zp+"seq", 1, 0, 0)
	if err != nil {
		return fmt.Errorf("redistier: tiered sequence: %w", err)
	}
	r, err := l.runN(ctx, 2, tieredScript, key+":"+strconv.FormatInt(win, 10), host, seq, n, 2*l.window)
	if err != nil {
		return l.markBad(win, key, err)
	}
	ttl := time.Duration(2*l.window) * time.Millisecond
	if _, err := l.d.Set(l.zkey(win, key, "|c|o"), dict.Int(r[0]-r[1]), ttl, 0); err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	if _, err := l.d.Set(fk, dict.Int(r[1]), ttl, 0); err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
}

// hostID returns the host's id in Redis, drawn at random by the first
// flusher of the zone and kept there.
func (l *Tiered) hostID() (string, error) {
	k := l.zp + "host"
	var b [8]byte
	rand.Read(b[:])
	if _, err := l.d.Add(k, dict.Int(int64(binary.LittleEndian.Uint64(b[:])>>1)), 0, 0); err != nil && !errors.Is(err, dict.ErrExists) {
		return "", fmt.Errorf("redistier: tiered host id: %w", err)
	}
	id, err := l.intAt(k)
	return strconv.FormatInt(id, 10), err
}

// Run calls Flush every interval until ctx is done; errors are counted in
// Stats. Every process of a host runs it (one of them flushes at a time).
func (l *Tiered) Run(ctx context.Context) {
	t := time.NewTicker(time.Duration(l.interval) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Flush(ctx)
		}
	}
}
