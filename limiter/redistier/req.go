package redistier

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/leak"
	"github.com/shmzone/shmzone/limiter"
)

// reqScript is lua-resty-redis-ratelimit 0.03's script with five changes
// that leave the stored value's shape alone: an empty now reads TIME (the
// server clock), commit 0 writes nothing (a dry run), the reply carries how
// long a forbidden key stays so, a now before the stored time leaks
// nothing and leaves the stored time as it is (doc.go: the Lua module's
// |now − last| leaks it, which over-admits), and an allowed request's TTL
// lasts until its state no longer counts. The value is the JSON
// [excess_m, last_ms, forbidden]; an allowed request stores it with a TTL
// of 60 s, or (excess_m+1000)/rate_m seconds when that is longer (at most
// a century), the time after which the next request finds the key as if
// new; a rejection with duration > 0 stores it forbidden for duration
// seconds.
//
// A cost above 1 adds (cost−1)·1000 to the excess after the leak, as cost
// requests at one time would, and the first request of a key is then
// judged against the burst too.
//
// KEYS[1] zone:key, KEYS[2] the live hash if the script reads it; ARGV
// rate_m, now_ms or "", burst_m, duration_s, commit, cost, the numbers as
// the Lua module sends them (Lua's tostring), then the live rate_m and
// burst_m if the script does not read the hash. The live numbers replace
// ARGV's. Reply {code, trunc(excess_m), pttl, rate_m, trunc(burst_m·1000)}:
// code 1 allowed, 2 rejected (pttl > 0 when the rejection made the key
// forbidden), 3 forbidden (pttl its TTL), 4 a cost above burst+1, which
// the script rejects before reading the key.
var reqScript = redis.NewScript(luaNow(2, 1000) + luaState + reqLive.script() + `
local key = KEYS[1]
local lv = liveNums(liveRead(KEYS[2], 7), {tonumber(ARGV[1]), tonumber(ARGV[3])}, 'BADLIVE')
local rate, burst = lv[1], lv[2]
local duration = tonumber(ARGV[4])
local commit = ARGV[5] == '1'
local cost = tonumber(ARGV[6])
local function reply(code, e, pttl)
  return {code, e, pttl, rate, burst * 1000}
end
if (cost - 1) * 1000 > burst then return reply(4, 0, 0) end
local excess, last, forbidden = 0, 0, 0
local res = redis.call('GET', key)
if not res and cost > 1 then
  excess = (cost - 1) * 1000
  if excess > burst then return reply(2, excess, 0) end
end
if res then
  local v = reqState(key, res, now)
  if type(v) == 'table' and #v > 2 then
    excess, last, forbidden = v[1], v[2], v[3]
  end
  if forbidden == 1 then
    return reply(3, excess, redis.call('PTTL', key))
  end
  local ms = now - last
  if ms < 0 then
    ms, now = 0, last
  end
  excess = excess - rate * ms / 1000 + 1000
  if excess < 0 then excess = 0 end
  if cost > 1 then excess = excess + (cost - 1) * 1000 end
  if excess > burst then
    if duration > 0 and commit then
      redis.call('SET', key, cjson.encode({excess, now, 1}), 'EX', duration)
      return reply(2, excess, duration * 1000)
    end
    return reply(2, excess, 0)
  end
end
if commit then
  local ttl = math.ceil((excess + 1000) / rate)
  if ttl < 60 then ttl = 60 elseif ttl > 3153600000 then ttl = 3153600000 end
  redis.call('SET', key, cjson.encode({excess, now, 0}), 'EX', ttl)
end
return reply(1, excess, 0)
`)

// reqUncommitScript takes ARGV[2] requests off the stored excess, not
// below 0, and keeps the time of the last request, the forbidden flag and
// the TTL.
var reqUncommitScript = redis.NewScript(luaNow(1, 1000) + luaState + `
local res = redis.call('GET', KEYS[1])
if not res then return {0} end
local v = reqState(KEYS[1], res, now)
local e = v[1] - tonumber(ARGV[2]) * 1000
if e < 0 then e = 0 end
redis.call('SET', KEYS[1], cjson.encode({e, v[2], v[3]}), 'KEEPTTL')
return {1}
`)

// Req is a leaky bucket on Redis, state-compatible with
// lua-resty-redis-ratelimit. Go services and OpenResty nodes that use the
// same zone, rate, burst and duration share one key space. Req stores the
// JSON [excess_m, last_ms, forbidden] under "zone:key", as the module
// does. The zero value is not usable: create a Req with NewReq.
//
// Requests drain at rate. Up to burst requests above the rate wait, for
// Decision.Delay. More are rejected. With a duration, a rejection makes
// the key forbidden for that duration. An allowed request stores the
// value for 60 s, or until the next request would find the key as new,
// if that is longer.
//
// Req sends the Lua module's arguments, computed and formatted as it does.
// So both decide alike on the key's state, call by call, whichever wrote
// last. The package doc says where they differ.
//
// SetRate and SetBurst change the rate and the burst live, for every host.
// The duration has no setter.
type Req struct {
	base
	rateM, burstM float64 // milli-requests per second, milli-requests, as the script reads them
	rateArg       string  // rateM and burstM as sent
	burstArg      string
	burstU        int64 // trunc(burstM·1000), as the script replies it
	durationS     int64 // seconds; 0 = rejections write nothing
}

// NewReq returns a leaky bucket on c under keys "zone:key". rate is a rate
// string as the Lua module takes it, such as "10r/s", "30r/m" or "0.5r/s".
// limiter.ParseRate reads such strings. NewReq converts the rate to
// milli-requests per second as the module does, floor(n·1000/per), so 1r/m
// is 16. burst is in requests. duration is how long a key stays forbidden
// after a rejection. It is truncated to whole seconds, and 0 means never.
//
// NewReq returns ErrNilClient, ErrNoContextTimeout or ErrNoLocal for a
// client or Options it cannot use. It returns limiter.ErrBadRate for a
// rate that limiter.ParseRate refuses, for a rate below a milli-request
// per second, and for one above 2^53 of them, such as an infinite rate.
// It returns limiter.ErrBadBurst for a burst that is negative, NaN or 1e12
// or more. It returns limiter.ErrBadWindow for a negative duration.
func NewReq(c redis.UniversalClient, zone, rate string, burst float64, duration time.Duration, o Options) (*Req, error) {
	n, per, err := limiter.ParseRateParts(rate)
	if err != nil {
		return nil, err
	}
	if !(burst >= 0 && burst < 1e12) {
		return nil, fmt.Errorf("%w: %v", limiter.ErrBadBurst, burst)
	}
	if duration < 0 {
		return nil, fmt.Errorf("%w: duration %v", limiter.ErrBadWindow, duration)
	}
	l := &Req{durationS: int64(duration / time.Second)}
	l.rateM, l.rateArg = luaArg(math.Floor(n * 1000 / per))
	l.burstM, l.burstArg = luaArg(burst * 1000)
	if !(l.rateM >= 1) {
		return nil, fmt.Errorf("%w: %q is below a milli-request per second", limiter.ErrBadRate, rate)
	}
	if l.rateM > maxExact {
		return nil, fmt.Errorf("%w: %q is above 2^53 milli-requests per second", limiter.ErrBadRate, rate)
	}
	l.most.Store(int64(math.Floor(l.burstM/1000)) + 1)
	l.burstU = int64(l.burstM * 1000)
	if err := l.init(c, zone, o, false); err != nil {
		return nil, err
	}
	l.initLive(reqLive, l.rateArg, l.burstArg)
	return l, nil
}

// luaArg returns x as the Lua module sends it, Lua's tostring ("%.14g"),
// and the number the script reads back from that.
func luaArg(x float64) (float64, string) {
	s := strconv.FormatFloat(x, 'g', 14, 64)
	v, _ := strconv.ParseFloat(s, 64)
	return v, s
}

// Incoming is IncomingN of one request.
func (l *Req) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.incoming(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n for key. It adds n requests to
// the bucket's excess: the first after the leak, as the Lua module adds
// one, then n−1 more. An allowed request waits Delay, trunc(excess)/rate.
// State is the excess in requests. If commit is false, nothing is
// written. A forbidden key is rejected, with RetryAfter and ResetAfter
// its TTL.
//
// A cost above burst+1 is never admitted. The script rejects it with the
// burst in force, before reading the key, and does not make the key
// forbidden. RetryAfter is then
// the longest Duration.
//
// IncomingN returns limiter.ErrBadCost if n is below 1, and ErrBadKey for
// an empty key. It returns ErrBadState for a value no Req writes, and
// ErrScript for a script that failed. It returns ErrUnavailable under
// FailError, and Options.Local's errors under FailLocal.
//
// IncomingN returns ErrBadLive for live numbers the limiter refuses. No
// failure policy applies to it.
func (l *Req) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if err := checkCost(n); err != nil {
		return limiter.Decision{}, err
	}
	return l.incoming(ctx, key, n, commit)
}

func (l *Req) incoming(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	r, err := l.runN(ctx, 5, reqScript, key, l.rateArg, l.now(1000), l.burstArg, l.durationS, flag(commit), n)
	if err != nil {
		return l.fail(ctx, key, n, commit, err)
	}
	rateM, burstM := l.rateM, l.burstM
	if r[3] != int64(l.rateM) || r[4] != l.burstU { // live numbers
		rateM, burstM = float64(r[3]), float64(r[4])/1000
	}
	l.most.Store(int64(math.Floor(burstM/1000)) + 1)
	if r[0] == 4 {
		return tooCostly(), nil
	}
	return l.decide(rateM, burstM, r[0], r[1], r[2], n, commit), nil
}

// decide turns the script's reply into a Decision. The delay is the Lua
// module's, trunc(excess)/rate seconds. ResetAfter is how long until the key
// is back to a fresh key's allowance: a stored excess E is after
// (E+1000)/rate, when the next request's E − leak + 1000 is 0. Code 1
// replies the excess the request stores (a dry run's, as a commit would),
// so ResetAfter is (excess+1000)/rate; code 2 the excess of a request of
// cost n that stores nothing, E = excess − n·1000 after the leak, so
// (excess − (n−1)·1000)/rate. A forbidden key (code 3, or code 2 with the
// pttl of the rejection that forbade it) expires after pttl and is then
// fresh.
func (l *Req) decide(rateM, burstM float64, code, excess, pttl, n int64, commit bool) limiter.Decision {
	d := limiter.Decision{State: float64(excess) / 1000}
	switch code {
	case 1:
		d.Allowed, d.Committed = true, commit
		d.Delay = leak.Time(float64(excess), rateM)
		d.ResetAfter = leak.Time(float64(excess)+1000, rateM)
		if r := (burstM - float64(excess)) / 1000; r > 0 {
			d.Remaining = int64(min(r, math.MaxInt64/2))
		}
	case 3:
		d.RetryAfter = ms(max(pttl, 0))
		d.ResetAfter = d.RetryAfter
	default:
		if pttl > 0 { // this rejection made the key forbidden
			d.RetryAfter = ms(pttl)
			d.ResetAfter = d.RetryAfter
			break
		}
		d.RetryAfter = leak.Time(float64(excess)-burstM, rateM)
		d.ResetAfter = leak.Time(float64(excess)-float64(n-1)*1000, rateM)
	}
	return d
}

// Uncommit is UncommitN of one request.
func (l *Req) Uncommit(ctx context.Context, key string) error { return l.uncommit(ctx, key, 1) }

// UncommitN gives a request of cost n back. The stored excess drops by n
// requests, but not below 0. The key keeps its TTL, and stays forbidden if
// it was. A key without state stays so.
//
// UncommitN returns limiter.ErrBadCost if n is below 1 or above burst+1,
// with the burst in force at the limiter's last decision,
// and ErrBadKey for an empty key. It returns ErrBadState for a value no
// Req writes, and ErrScript for a script that failed. If Redis does not
// answer, it returns ErrUnavailable, unless the policy is FailLocal.
// FailLocal gives the request back to Options.Local instead.
func (l *Req) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.most.Load()); err != nil {
		return err
	}
	return l.uncommit(ctx, key, n)
}

func (l *Req) uncommit(ctx context.Context, key string, n int64) error {
	if _, err := l.run(ctx, reqUncommitScript, key, l.now(1000), n); err != nil {
		return l.failUncommit(ctx, key, n, err)
	}
	return nil
}

// Reset deletes key's value, forbidden or not. Under FailLocal, Reset
// resets key in Options.Local too, whatever Redis answers.
//
// Reset returns ErrBadKey for an empty key, ErrUnavailable if Redis does
// not answer, whatever the policy, and ErrScript for an error reply. Under
// FailLocal it also returns Options.Local's errors.
func (l *Req) Reset(ctx context.Context, key string) error {
	return l.resetKeys(ctx, key, l.key(key))
}
