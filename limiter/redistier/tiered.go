package redistier

import (
	"context"
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

// tieredScript adds a host's delta to a key's global count of one window
// and returns the total; the key expires two windows after it opened.
// KEYS[1] prefix:key:window; ARGV delta, ttl_ms. Reply {total}.
var tieredScript = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {n}
`)

// Tiered is a global limit of limit requests per fixed window across hosts,
// at a fraction of the Redis traffic of a Redis limiter. Decisions never
// wait for Redis: the processes of a host count in the host's zone (one
// dict shared by them), and one process per host at a time, the holder of a
// lease in the zone, flushes the host's delta of each key to Redis every
// interval and reads back the global count (one script run per key).
//
// A host admits a request when the global count it last read, plus the
// host's requests not yet flushed, stays within limit, so it never rejects
// below the global limit it knows of. It does not see other hosts' requests
// of the last interval or two (theirs not yet flushed, and those flushed
// since it read), so in a window the hosts together admit at most
//
//	limit + 2 · hosts · rate · interval
//
// where rate is the most requests per second one host admits; with flushes
// spread over the interval the overshoot is about hosts · rate · interval.
// Redis load: one round trip per host per key per interval (plus one per
// host and key at a window's end for the last delta), whatever the request
// rate. While Redis is unreachable hosts keep deciding on their last global
// count and keep their deltas for the next flush: nothing is lost, and each
// host may admit up to what it believed was left.
type Tiered struct {
	base
	d                *dict.Dict
	limit            int64
	window, interval int64  // ms
	id               int64  // this instance's lease id, unique on the host
	zp               string // zone key prefix "tier|prefix|"
	flushes          atomic.Uint64
}

var tieredSeq atomic.Int64

// NewTiered returns a tiered limiter of limit requests per window across
// every host that uses the same c and prefix, each host counting in d.
// Every process of a host calls Flush every interval (Run does), or the
// host never learns the global count. Options.Timeout bounds each flush;
// Options.Now is the clock of the windows (the hosts' clocks should agree
// to well within a window). OnFailure and Local are not used.
// Errors: ErrNilClient, ErrNoContextTimeout, limiter.ErrNilDict,
// limiter.ErrBadLimit, limiter.ErrBadWindow for a window or interval below
// 1 ms or an interval longer than the window.
func NewTiered(d *dict.Dict, c redis.UniversalClient, prefix string, limit int64, window, interval time.Duration, o Options) (*Tiered, error) {
	if d == nil {
		return nil, limiter.ErrNilDict
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadLimit, limit)
	}
	if interval < time.Millisecond || window < interval {
		return nil, fmt.Errorf("%w: window %v, interval %v", limiter.ErrBadWindow, window, interval)
	}
	o.OnFailure, o.Local, o.Clock = FailError, nil, CallerClock
	l := &Tiered{
		d: d, limit: limit, window: window.Milliseconds(), interval: interval.Milliseconds(),
		id: int64(os.Getpid())<<20 | tieredSeq.Add(1)&(1<<20-1),
		zp: "tier|" + prefix + "|",
	}
	if err := l.init(c, prefix, o, false); err != nil {
		return nil, err
	}
	return l, nil
}

// Zone keys, per window: "tier|prefix|win|key|d" the host's delta not yet
// flushed, "|g" the global count last read, "|m" a marker that the key is
// listed in "tier|prefix|win|keys"; all expire two windows on.
func (l *Tiered) zkey(win int64, key, suffix string) string {
	return l.zp + strconv.FormatInt(win, 10) + "|" + key + suffix
}

// Incoming decides on a request for key in the host's zone, without Redis.
// State and Remaining are the allowance left as this host knows it;
// RetryAfter on a rejection is the time to the window's end. Errors:
// ErrBadKey, the dictionary's.
func (l *Tiered) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	if key == "" {
		return limiter.Decision{}, ErrBadKey
	}
	now := l.o.Now().UnixMilli()
	win := now / l.window
	ttl := time.Duration(2*l.window) * time.Millisecond
	g, err := l.intAt(l.zkey(win, key, "|g"))
	if err != nil {
		return limiter.Decision{}, err
	}
	dk := l.zkey(win, key, "|d")
	var n int64
	if commit {
		if n, _, err = l.d.IncrInit(dk, 1, 0, ttl); err != nil {
			return limiter.Decision{}, fmt.Errorf("redistier: tiered %s: %w", key, err)
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
		return 0, fmt.Errorf("redistier: tiered %s: %w", k, err)
	}
	if v.Kind() != dict.KindInt {
		return 0, fmt.Errorf("%w: %s", limiter.ErrAbused, k)
	}
	return v.Int(), nil
}

// Uncommit gives one request back to this host's unflushed delta of key's
// current window (which may go negative: the next flush subtracts it).
// Errors: ErrBadKey, the dictionary's.
func (l *Tiered) Uncommit(ctx context.Context, key string) error {
	if key == "" {
		return ErrBadKey
	}
	win := l.o.Now().UnixMilli() / l.window
	if _, err := l.d.Incr(l.zkey(win, key, "|d"), -1); err != nil && !errors.Is(err, dict.ErrNotFound) {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
}

// Flush takes or renews the host's flusher lease and, when this instance
// holds it, flushes the delta of every key of the current window (and the
// rest of the previous window's) to Redis, reading back each global count.
// It reports whether this instance flushed. A key whose flush fails keeps its
// delta for the next flush; Flush goes on with the other keys and returns the
// first error.
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
	l.flushes.Add(1)
	win := l.o.Now().UnixMilli() / l.window
	return true, errors.Join(l.flushWindow(ctx, win-1, false), l.flushWindow(ctx, win, true))
}

// flushWindow flushes the keys listed for window win. The current window's
// keys are flushed every time and stay listed; the previous window's are
// flushed once more only when they still have a delta, then dropped.
func (l *Tiered) flushWindow(ctx context.Context, win int64, current bool) error {
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
		err = l.flushKey(ctx, win, key, current)
		if err != nil && first == nil {
			first = err
		}
		if current || err != nil {
			if _, err := l.d.RPush(lk, v); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// flushKey adds the host's delta of key to the global count and stores the
// total it reads back; the total is stored before the delta is taken off, so
// that the host's view never drops below the truth.
func (l *Tiered) flushKey(ctx context.Context, win int64, key string, current bool) error {
	dk := l.zkey(win, key, "|d")
	delta, err := l.intAt(dk)
	if err != nil || (!current && delta == 0) {
		return err
	}
	r, err := l.run(ctx, tieredScript, key+":"+strconv.FormatInt(win, 10), delta, 2*l.window)
	if err != nil {
		return err
	}
	ttl := time.Duration(2*l.window) * time.Millisecond
	if _, err := l.d.Set(l.zkey(win, key, "|g"), dict.Int(r[0]), ttl, 0); err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	if _, err := l.d.Incr(dk, -delta); err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
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
