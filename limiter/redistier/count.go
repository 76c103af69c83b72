package redistier

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter"
)

// countScript is a fixed window: INCRBY, and PEXPIRE when the INCRBY opened
// the window (or the key lost its TTL), in one script so that a key never
// lives without its window. A dry run reads the count. KEYS[1] prefix:key,
// KEYS[2] the live hash if the script reads it; ARGV window_ms, commit,
// cost, limit, then the live limit and window_ms if the script does not
// read the hash. Reply {count with this request, pttl, limit, window_ms}
// with the numbers in force. A cost above the limit replies count 0 and
// counts nothing.
var countScript = redis.NewScript(luaState + countLive.script() + `
local lv = liveNums(liveRead(KEYS[2], 5), {tonumber(ARGV[4]), tonumber(ARGV[1])}, 'BADLIVE')
local limit, window = lv[1], lv[2]
local n, cost = nil, tonumber(ARGV[3])
if cost > limit then return {0, 0, limit, window} end
countState(KEYS[1])
if ARGV[2] == '1' then
  n = redis.call('INCRBY', KEYS[1], cost)
else
  n = (tonumber(redis.call('GET', KEYS[1])) or 0) + cost
end
local ttl = redis.call('PTTL', KEYS[1])
if ARGV[2] == '1' and (n == cost or ttl < 0) then
  redis.call('PEXPIRE', KEYS[1], string.format('%d', window))
  ttl = window
end
return {n, ttl, limit, window}
`)

// countUncommitScript gives a cost back to an open window, down to a count
// of 0. ARGV cost.
var countUncommitScript = redis.NewScript(luaState + `
local n = countState(KEYS[1])
if not n then return {0} end
if n < tonumber(ARGV[1]) then return {redis.call('DECRBY', KEYS[1], string.format('%d', n))} end
return {redis.call('DECRBY', KEYS[1], ARGV[1])}
`)

// Count is a fixed window on Redis, as resty.limit.count. It admits limit
// requests per window. A window starts at a key's first committed request.
// The key holds the window's count, and expires with the window. The zero
// value is not usable: create a Count with NewCount.
//
// SetLimit and SetWindow change the limit and the window live, for every
// host. A key holds its count, not its allowance, so a new limit applies
// to open windows at once.
type Count struct {
	base
	limit  int64 // built
	window int64 // built, ms
}

// NewCount returns a fixed window on c of limit requests per window, under
// keys "prefix:key". window is in whole milliseconds.
//
// NewCount returns ErrNilClient, ErrNoContextTimeout or ErrNoLocal for a
// client or Options it cannot use. It returns limiter.ErrBadLimit for a
// limit below 1, and limiter.ErrBadWindow for a window below 1 ms.
func NewCount(c redis.UniversalClient, prefix string, limit int64, window time.Duration, o Options) (*Count, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadLimit, limit)
	}
	if window < time.Millisecond {
		return nil, fmt.Errorf("%w: %v", limiter.ErrBadWindow, window)
	}
	l := &Count{limit: limit, window: window.Milliseconds()}
	if err := l.init(c, prefix, o, false); err != nil {
		return nil, err
	}
	l.most.Store(limit)
	l.initLive(countLive, min(limit, maxExact), l.window)
	return l, nil
}

// Incoming is IncomingN of one request.
func (l *Count) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.incoming(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n for key. It takes n from the
// window's allowance. State is the allowance left, negative past the
// limit. ResetAfter is the window's remaining time. A committed request is
// counted even if rejected, as in the Lua module. A dry run counts
// nothing.
//
// A cost above limit is never admitted. The script rejects it with the
// limit in force, and counts nothing. RetryAfter is then the longest
// Duration.
//
// IncomingN returns limiter.ErrBadCost if n is below 1, and ErrBadKey for
// an empty key. It returns ErrBadState for a state no Count writes, and
// ErrScript for a script that failed. It returns ErrUnavailable under
// FailError, and Options.Local's errors under FailLocal.
//
// IncomingN returns ErrBadLive for live numbers the limiter refuses. No
// failure policy applies to it.
func (l *Count) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if err := checkCost(n); err != nil {
		return limiter.Decision{}, err
	}
	return l.incoming(ctx, key, n, commit)
}

func (l *Count) incoming(ctx context.Context, key string, cost int64, commit bool) (limiter.Decision, error) {
	r, err := l.runN(ctx, 4, countScript, key, l.window, flag(commit), cost, min(l.limit, maxExact))
	if err != nil {
		return l.fail(ctx, key, cost, commit, err)
	}
	n, ttl, limit, window := r[0], max(r[1], 0), r[2], r[3]
	if limit == min(l.limit, maxExact) { // no count passes 2^53
		limit = l.limit
	}
	l.most.Store(limit)
	if n == 0 {
		return tooCostly(), nil
	}
	if ttl == 0 && n == cost { // a dry run on a fresh key: the window it would open
		ttl = window
	}
	d := limiter.Decision{State: float64(limit - n), ResetAfter: ms(ttl)}
	if n > limit {
		d.RetryAfter = d.ResetAfter
		return d, nil
	}
	d.Allowed, d.Committed, d.Remaining = true, commit, limit-n
	return d, nil
}

// Uncommit is UncommitN of one request.
func (l *Count) Uncommit(ctx context.Context, key string) error { return l.uncommit(ctx, key, 1) }

// UncommitN gives a request of cost n back to key's window. A key without
// a window stays absent.
//
// The window's count does not drop below 0. So the allowance never grows
// past limit, unlike limiter.Count's. A count below 0 is a bad state: a key
// holding one would admit more than limit requests.
//
// UncommitN returns limiter.ErrBadCost if n is below 1 or above limit,
// with the limit in force at the limiter's last decision, and
// ErrBadKey for an empty key. It returns ErrBadState for a state no Count
// writes, and ErrScript for a script that failed. If Redis does not
// answer, it returns ErrUnavailable, unless the policy is FailLocal.
// FailLocal gives the request back to Options.Local instead.
func (l *Count) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.most.Load()); err != nil {
		return err
	}
	return l.uncommit(ctx, key, n)
}

func (l *Count) uncommit(ctx context.Context, key string, n int64) error {
	if _, err := l.run(ctx, countUncommitScript, key, n); err != nil {
		return l.failUncommit(ctx, key, n, err)
	}
	return nil
}

// Reset deletes key's window, so the next request opens a new one. Under
// FailLocal, Reset resets key in Options.Local too, whatever Redis answers.
//
// Reset returns ErrBadKey for an empty key, ErrUnavailable if Redis does
// not answer, whatever the policy, and ErrScript for an error reply. Under
// FailLocal it also returns Options.Local's errors.
func (l *Count) Reset(ctx context.Context, key string) error {
	return l.resetKeys(ctx, key, l.key(key))
}
