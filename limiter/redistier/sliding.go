package redistier

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter"
)

// slidingScript is limiter.SlidingWindow's estimate on one Redis hash: i the
// current window's index, c its count, p the previous window's; the key's
// TTL ends with the next window. In integer ms. KEYS[1] prefix:key,
// KEYS[2] the live hash if the script reads it; ARGV now_ms or "" (TIME),
// window_ms, limit, commit, delta (1 decide, -1 uncommit), cost, then the
// live limit if the script does not read the hash. Reply {allowed,
// left·w, elapsed, c, p, limit}, with the limit in force. allowed is 2
// for a cost above it, which the script rejects before reading the key.
var slidingScript = redis.NewScript(luaNow(1, 1000) + luaState + swLive.script() + `
local w, cost = tonumber(ARGV[2]), tonumber(ARGV[6])
local limit = liveNums(liveRead(KEYS[2], 7), {tonumber(ARGV[3]), w}, 'BADLIVE')[1]
if ARGV[5] ~= '-1' and cost > limit then return {2, 0, 0, 0, 0, limit} end
local idx = math.floor(now / w)
local v = redis.call('HMGET', KEYS[1], 'i', 'c', 'p')
swState(KEYS[1], v, now, w)
local i, c, p = tonumber(v[1]), tonumber(v[2]) or 0, tonumber(v[3]) or 0
if i == nil or i < idx - 1 then c, p = 0, 0
elseif i == idx - 1 then p, c = c, 0
elseif i > idx then idx = i end
local e = now - idx * w
if e < 0 then e = 0 elseif e > w then e = w end
if ARGV[5] == '-1' then
  if c > 0 and i == idx then redis.call('HINCRBY', KEYS[1], 'c', -math.min(c, cost)) end
  return {0, 0, e, c, p, limit}
end
local left = limit * w - p * (w - e) - (c + cost) * w
if left >= 0 and ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], 'i', string.format('%d', idx), 'c', c + cost, 'p', p)
  redis.call('PEXPIRE', KEYS[1], (idx + 2) * w - now)
end
if left >= 0 then return {1, left, e, c, p, limit} end
return {0, left, e, c, p, limit}
`)

// SlidingWindow is limiter.SlidingWindow on Redis. It weighs the previous
// fixed window's count by the part of it that the sliding window still
// covers, and adds the current window's count. Its error bound is the
// same. It admits at most 2·limit − 1 requests in any window, and is
// exact under even traffic. A key is one hash, so one slot. SlidingWindow
// uses the server's clock by default. The zero value is not usable: create
// a SlidingWindow with NewSlidingWindow.
//
// SetLimit changes the limit live, for every host. The window has no
// setter.
type SlidingWindow struct {
	base
	limit, w int64 // built requests, ms
}

// NewSlidingWindow returns a sliding window on c of limit requests per
// window, under keys "prefix:key". window is in whole milliseconds.
//
// NewSlidingWindow returns ErrNilClient, ErrNoContextTimeout or ErrNoLocal
// for a client or Options it cannot use. It returns limiter.ErrBadLimit
// for a limit below 1. It returns limiter.ErrBadWindow for a window below
// 1 ms, or for one where limit times the window in ms passes 2^53.
func NewSlidingWindow(c redis.UniversalClient, prefix string, limit int64, window time.Duration, o Options) (*SlidingWindow, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadLimit, limit)
	}
	w := window.Milliseconds()
	if w < 1 || float64(limit)*float64(w) > 1<<53 {
		return nil, fmt.Errorf("%w: %v", limiter.ErrBadWindow, window)
	}
	l := &SlidingWindow{limit: limit, w: w}
	if err := l.init(c, prefix, o, true); err != nil {
		return nil, err
	}
	l.most.Store(limit)
	l.initLive(swLive, limit, w)
	return l, nil
}

// Incoming is IncomingN of one request.
func (l *SlidingWindow) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.incoming(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n for key. If commit is true and
// the request is allowed, it counts n requests. A rejection counts
// nothing. State is the estimated allowance left after the request.
//
// A cost above limit is never admitted. The script rejects it with the
// limit in force, before reading the key. RetryAfter is then the longest
// Duration.
//
// IncomingN returns limiter.ErrBadCost if n is below 1, and ErrBadKey for
// an empty key. It returns ErrBadState for a state no SlidingWindow
// writes, and ErrScript for a script that failed. It returns
// ErrUnavailable under FailError, and Options.Local's errors under
// FailLocal.
//
// IncomingN returns ErrBadLive for live numbers the limiter refuses. No
// failure policy applies to it.
func (l *SlidingWindow) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if err := checkCost(n); err != nil {
		return limiter.Decision{}, err
	}
	return l.incoming(ctx, key, n, commit)
}

func (l *SlidingWindow) incoming(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	r, err := l.runN(ctx, 6, slidingScript, key, l.now(1000), l.w, l.limit, flag(commit), 1, n)
	if err != nil {
		return l.fail(ctx, key, n, commit, err)
	}
	left, e, c, p, limit := r[1], r[2], r[3], r[4], r[5]
	l.most.Store(limit)
	if r[0] == 2 {
		return tooCostly(), nil
	}
	d := limiter.Decision{State: float64(left) / float64(l.w), ResetAfter: ms(l.reset(e, c, p))}
	if r[0] == 1 {
		d.Allowed, d.Committed, d.Remaining = true, commit, left/l.w
		if commit && c == 0 { // this request opened the current window
			d.ResetAfter = ms(2*l.w - e)
		}
		return d, nil
	}
	d.RetryAfter = ms(l.retry(limit, e, c, p, n))
	return d, nil
}

// reset is how long until neither window counts: to the end of the next
// window while the current one has requests, else to the end of this one.
func (l *SlidingWindow) reset(e, c, p int64) int64 {
	switch {
	case c > 0:
		return 2*l.w - e
	case p > 0:
		return l.w - e
	}
	return 0
}

// retry is how long until a request of cost n fits: within this window once
// the previous window's weight has shrunk enough, else in the next one, where
// the current count becomes the previous.
func (l *SlidingWindow) retry(limit, e, c, p, n int64) int64 {
	w := float64(l.w)
	if c+n <= limit && p > 0 { // wait for p·(w−e') ≤ (limit−c−n)·w
		at := w - float64(limit-c-n)*w/float64(p)
		return max(int64(math.Ceil(at))-e, 1)
	}
	at := 0.0 // in the next window: c·(w−e') + n·w ≤ limit·w
	if c > 0 {
		at = max(w-float64(limit-n)*w/float64(c), 0)
	}
	return l.w - e + int64(math.Ceil(at))
}

// Uncommit is UncommitN of one request.
func (l *SlidingWindow) Uncommit(ctx context.Context, key string) error {
	return l.uncommit(ctx, key, 1)
}

// UncommitN gives a request of cost n back to key's current window. The
// window's count does not drop below 0.
//
// UncommitN returns limiter.ErrBadCost if n is below 1 or above limit,
// with the limit in force at the limiter's last decision, and
// ErrBadKey for an empty key. It returns ErrBadState for a state no
// SlidingWindow writes, and ErrScript for a script that failed. If Redis
// does not answer, it returns ErrUnavailable, unless the policy is
// FailLocal. FailLocal gives the request back to Options.Local instead.
func (l *SlidingWindow) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.most.Load()); err != nil {
		return err
	}
	return l.uncommit(ctx, key, n)
}

func (l *SlidingWindow) uncommit(ctx context.Context, key string, n int64) error {
	if _, err := l.run(ctx, slidingScript, key, l.now(1000), l.w, l.limit, "0", -1, n); err != nil {
		return l.failUncommit(ctx, key, n, err)
	}
	return nil
}

// Reset deletes key's windows. Under FailLocal, Reset resets key in
// Options.Local too, whatever Redis answers.
//
// Reset returns ErrBadKey for an empty key, ErrUnavailable if Redis does
// not answer, whatever the policy, and ErrScript for an error reply. Under
// FailLocal it also returns Options.Local's errors.
func (l *SlidingWindow) Reset(ctx context.Context, key string) error {
	return l.resetKeys(ctx, key, l.key(key))
}
