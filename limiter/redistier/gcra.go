package redistier

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter"
)

// gcraScript is GCRA in integer microseconds: limiter.GCRA's algorithm
// (limiter/gcra.go) with µs for ns, since Unix µs fit a Lua double exactly. The stored value is the TAT, with a
// TTL that ends when it is reached. KEYS[1] prefix:key, KEYS[2] the live
// hash if the script reads it; ARGV now_us or "" (TIME), T_us, burst, n,
// commit, then the live T_us and burst if the script does not read the
// hash. tau is T·burst. Reply {allowed 0/1, remaining, retry_us, reset_us,
// burst}, with the burst in force. retry_us is capped at 9e18 (span
// saturates it): a huge n waits beyond 2^63 µs, which Redis would reply as
// LLONG_MIN.
var gcraScript = redis.NewScript(luaNow(1, 1e6) + luaState + gcraLive.script() + `
local lv = liveNums(liveRead(KEYS[2], 6), {tonumber(ARGV[2]), tonumber(ARGV[3])}, 'BADLIVE')
local T, b, n = lv[1], lv[2], tonumber(ARGV[4])
local tau = T * b
local tat = gcraState(KEYS[1], now) or now
if tat < now then tat = now end
local new_tat = tat + n * T
local allow_at = new_tat - tau
if now < allow_at then
  return {0, 0, math.min(allow_at - now, 9e18), tat - now, b}
end
if ARGV[5] == '1' and n > 0 then
  redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
end
return {1, math.floor((now - allow_at) / T), 0, new_tat - now, b}
`)

// gcraUncommitScript moves the TAT back by n·T, not before now, with the
// T in force. ARGV now_us or "", n, T_us, burst, then the live T_us and
// burst if the script does not read the hash.
var gcraUncommitScript = redis.NewScript(luaNow(1, 1e6) + luaState + gcraLive.script() + `
local T = liveNums(liveRead(KEYS[2], 5), {tonumber(ARGV[3]), tonumber(ARGV[4])}, 'BADLIVE')[1]
local tat = gcraState(KEYS[1], now)
if tat == nil then return {0} end
tat = tat - tonumber(ARGV[2]) * T
if tat <= now then redis.call('DEL', KEYS[1]) return {1} end
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
return {1}
`)

// GCRA is the generic cell rate algorithm on Redis, with the results of
// go-redis/redis_rate. It works in integer microseconds, on the server's
// TIME by default. A fresh key of 10 per second with burst 10 reports
// Remaining 9. The zero value is not usable: create a GCRA with NewGCRA.
//
// SetRate and SetBurst change the rate and the burst live, for every host.
type GCRA struct {
	base
	t, burst int64 // built: µs, requests
}

// NewGCRA returns a GCRA on c of rate requests per second, with bursts of
// up to burst, under keys "prefix:key". It enforces the emission interval
// 1/rate, rounded to the nearest microsecond.
//
// NewGCRA returns ErrNilClient, ErrNoContextTimeout or ErrNoLocal for a
// client or Options it cannot use. It returns limiter.ErrBadRate if the
// rounded interval is not between 1 µs and a year. It returns
// limiter.ErrBadBurst for a burst below 1, or for one whose burst
// intervals last more than 100 years.
func NewGCRA(c redis.UniversalClient, prefix string, rate float64, burst int64, o Options) (*GCRA, error) {
	const year = int64(365 * 24 * time.Hour / time.Microsecond)
	t := math.Round(1e6 / rate)
	if !(t >= 1 && t <= float64(year)) {
		return nil, fmt.Errorf("%w: %v requests per second", limiter.ErrBadRate, rate)
	}
	if burst < 1 || burst > 100*year/int64(t) {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadBurst, burst)
	}
	l := &GCRA{t: int64(t), burst: burst}
	if err := l.init(c, prefix, o, true); err != nil {
		return nil, err
	}
	l.most.Store(burst)
	l.initLive(gcraLive, l.t, burst)
	return l, nil
}

// Incoming is IncomingN of one request.
func (l *GCRA) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.allow(ctx, key, 1, commit)
}

// IncomingN decides on n requests at once, as redis_rate's AllowN does. It
// moves the TAT by n emission intervals. If commit is true and the
// requests are allowed, it counts them. A rejection and a dry run count
// nothing.
//
// A cost above burst is never admitted. As in redis_rate, RetryAfter is
// then how long until the TAT would allow n, as if the burst were larger.
//
// IncomingN returns limiter.ErrBadCost if n is below 1, and ErrBadKey for
// an empty key. It returns ErrBadState for a state no GCRA writes, and
// ErrScript for a script that failed. It returns ErrUnavailable under
// FailError, and Options.Local's errors under FailLocal.
//
// IncomingN returns ErrBadLive for live numbers the limiter refuses. No
// failure policy applies to it.
func (l *GCRA) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if err := checkCost(n); err != nil {
		return limiter.Decision{}, err
	}
	return l.allow(ctx, key, n, commit)
}

func (l *GCRA) allow(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	r, err := l.runN(ctx, 5, gcraScript, key, l.now(1e6), l.t, l.burst, n, flag(commit))
	if err != nil {
		return l.fail(ctx, key, n, commit, err)
	}
	l.most.Store(r[4])
	d := limiter.Decision{
		Allowed:    r[0] == 1,
		Committed:  r[0] == 1 && commit,
		Remaining:  r[1],
		State:      float64(r[1]),
		RetryAfter: span(r[2], time.Microsecond),
		ResetAfter: span(r[3], time.Microsecond),
	}
	return d, nil
}

// Uncommit is UncommitN of one request.
func (l *GCRA) Uncommit(ctx context.Context, key string) error { return l.uncommit(ctx, key, 1) }

// UncommitN gives n requests back. The TAT moves back by n emission
// intervals, but not before now.
//
// UncommitN returns limiter.ErrBadCost if n is below 1 or above burst,
// with the burst in force at the limiter's last decision, and
// ErrBadKey for an empty key. It returns ErrBadState for a state no GCRA
// writes, and ErrScript for a script that failed. If Redis does not
// answer, it returns ErrUnavailable, unless the policy is FailLocal.
// FailLocal gives the requests back to Options.Local instead.
func (l *GCRA) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.most.Load()); err != nil {
		return err
	}
	return l.uncommit(ctx, key, n)
}

// uncommit is UncommitN of a checked cost.
func (l *GCRA) uncommit(ctx context.Context, key string, n int64) error {
	if _, err := l.run(ctx, gcraUncommitScript, key, l.now(1e6), n, l.t, l.burst); err != nil {
		return l.failUncommit(ctx, key, n, err)
	}
	return nil
}

// Reset deletes key's TAT. Under FailLocal, Reset resets key in
// Options.Local too, whatever Redis answers.
//
// Reset returns ErrBadKey for an empty key, ErrUnavailable if Redis does
// not answer, whatever the policy, and ErrScript for an error reply. Under
// FailLocal it also returns Options.Local's errors.
func (l *GCRA) Reset(ctx context.Context, key string) error {
	return l.resetKeys(ctx, key, l.key(key))
}
