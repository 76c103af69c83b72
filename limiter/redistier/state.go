package redistier

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// The states a limiter can have written. Each script reads a key's state
// through one of the Lua functions below before any arithmetic on it, and
// raises a BADSTATE error for a value that no limiter of its type writes;
// run turns that error into ErrBadState. The bounds hold for every limiter
// of a type, not only for one's parameters, so that limiters whose
// configuration changed still read each other's states.
const (
	// maxExact is the largest integer a Lua number (a double) keeps exact:
	// no count, time or excess beyond it is a limiter's.
	maxExact = 1 << 53
	// maxExcessM is the largest excess a Req stores, in milli-requests: a
	// rejection with a duration stores one request above the burst, and
	// NewReq takes bursts below 1e12 requests.
	maxExcessM = 1e12*1000 + 1000
	// maxTauUs is the largest burst tolerance NewGCRA accepts, in µs: no TAT
	// is further ahead of the time it was written at.
	maxTauUs = int64(100 * 365 * 24 * time.Hour / time.Microsecond)
	// maxAheadMs is how far ahead of a decision's clock a window may start:
	// the clocks that share a key disagree by less than a day.
	maxAheadMs = int64(24 * time.Hour / time.Millisecond)
)

// luaState defines the Lua functions that check a key's state; every
// script that reads a state starts with it and calls its limiter's check
// before any arithmetic: reqState (the decoded JSON [excess_m, last_ms,
// forbidden]: numbers in range, a flag 0 or 1, and a TTL when forbidden),
// countState (an integer from 0 to 2^53 as INCR writes it), gcraState (an
// integer TAT, not further ahead than the largest tolerance) and swState (a hash of exactly
// i, c and p: a window not a day ahead, counts within any limit). Each
// returns the checked state, or nothing for an absent key, and raises
// badstate on anything else: the error reply that run reads as ErrBadState.
// A key of another type fails its first read with WRONGTYPE, which run
// reads as ErrBadState too. Tiered's flush script checks its hashes itself
// (tieredScript): it sends many keys in one run, so it answers a bad state
// per key rather than failing the run.
var luaState = fmt.Sprintf(`
local function badstate(what)
  error({err = 'BADSTATE holds ' .. what})
end
local function within(x, lo, hi)
  return type(x) == 'number' and x >= lo and x <= hi
end
local function integer(x, lo, hi)
  return within(x, lo, hi) and x == math.floor(x)
end
local function describe(x)
  if not x then return 'nothing' end
  if type(x) == 'number' then return string.format('%%.17g', x) end
  if x == cjson.null then return 'null' end
  return 'a ' .. type(x)
end
local function canonical(s, lo, hi)
  local n = tonumber(s)
  if integer(n, lo, hi) and string.format('%%d', n) == s then return n end
  return nil
end
local function reqState(key, res, now)
  local ok, v = pcall(cjson.decode, res)
  if not ok then badstate('a string that is not JSON') end
  if type(v) ~= 'table' or #v ~= 3 then badstate(describe(v) .. ', not [excess, last, forbidden]') end
  if not within(v[1], 0, %[1]d) then badstate('an excess of ' .. describe(v[1])) end
  if not within(v[2], 0, now + %[4]d) then badstate('a last time of ' .. describe(v[2])) end
  if v[3] ~= 0 and v[3] ~= 1 then badstate('a forbidden flag of ' .. describe(v[3])) end
  if v[3] == 1 and redis.call('PTTL', key) < 0 then badstate('a forbidden value without TTL') end
  return v
end
local function countState(key)
  local res = redis.call('GET', key)
  if not res then return nil end
  local n = canonical(res, 0, %[2]d)
  if not n then badstate('a count of ' .. describe(tonumber(res) or res)) end
  return n
end
local function gcraState(key, now)
  local res = redis.call('GET', key)
  if not res then return nil end
  local tat = canonical(res, 0, now + %[3]d)
  if not tat then badstate('a TAT of ' .. describe(tonumber(res) or res)) end
  return tat
end
local function swState(key, v, now, w)
  local n = redis.call('HLEN', key)
  if n == 0 then return end
  if n ~= 3 then badstate('a hash of ' .. n .. ' fields, not i, c, p') end
  local i, c, p = tonumber(v[1]), tonumber(v[2]), tonumber(v[3])
  if not integer(i, 0, math.floor((now + %[4]d) / w)) then badstate('a window of ' .. describe(i or v[1])) end
  local most = math.floor(%[2]d / w)
  if not integer(c, 0, most) then badstate('a count of ' .. describe(c or v[2])) end
  if not integer(p, 0, most) then badstate('a previous count of ' .. describe(p or v[3])) end
end
`, int64(maxExcessM), int64(maxExact), maxTauUs, maxAheadMs)

// ErrBadState replies: the scripts' own, and Redis's for a key of another
// type.
var badStatePrefixes = []string{"BADSTATE ", "WRONGTYPE "}

// callErr wraps the error of a script run on key: ErrBadState when the
// script found a state no limiter writes, or when Redis answered with a reply
// that is not the script's (call succeeded, reply did not parse); ErrScript
// for another error reply of the script; ErrUnavailable for the rest, which
// did not reach Redis or got no answer in time.
func callErr(key string, call, reply error) error {
	if call == nil {
		return fmt.Errorf("%w: %s: a reply no script returns: %w", ErrBadState, key, reply)
	}
	var re redis.Error
	if errors.As(call, &re) {
		if strings.HasPrefix(re.Error(), "BADLIVE ") {
			return fmt.Errorf("%w: %s: %w", ErrBadLive, key, call)
		}
		for _, p := range badStatePrefixes {
			if strings.HasPrefix(re.Error(), p) {
				return fmt.Errorf("%w: %s: %w", ErrBadState, key, call)
			}
		}
	}
	if isScriptErr(call) {
		return fmt.Errorf("%w: %s: %w", ErrScript, key, call)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, key, call)
}

// replyOf checks that a script's reply r has its n integers.
func replyOf(key string, r []int64, n int) error {
	if len(r) != n {
		return fmt.Errorf("%w: %s: a reply of %d integers, not %d", ErrBadState, key, len(r), n)
	}
	return nil
}

// span returns n units as a Duration: 0 for n ≤ 0, saturating at the
// longest Duration.
func span(n int64, unit time.Duration) time.Duration {
	switch {
	case n <= 0:
		return 0
	case n > math.MaxInt64/int64(unit):
		return math.MaxInt64
	}
	return time.Duration(n) * unit
}

// Tiered's states in the zone. A key whose Redis state is bad has its
// other hosts' count ("|c|o") replaced by badMark until a flush reads a good
// one, so that its decisions return ErrBadState instead of deciding on a
// count that no longer comes.
var badMark = dict.String("redistier: bad state in redis")

// markBad marks the key of item it bad in the zone, whose Redis hash its
// flush found in a bad state, unless this instance's lease has ended (see
// fencedSet); it reports whether it marked it.
func (l *Tiered) markBad(it flushItem) (bool, error) {
	return l.fencedSet(it.others, badMark, time.Duration(2*l.window)*time.Millisecond)
}

// zoneValueErr is the error of a zone value v under k that is not an int:
// ErrBadState for a key marked bad, limiter.ErrAbused for another value.
func zoneValueErr(k string, v dict.Value) error {
	if v.Equal(badMark) {
		return fmt.Errorf("%w: %s: its Redis key holds a state no Tiered writes", ErrBadState, k)
	}
	return fmt.Errorf("%w: %s holds %s", limiter.ErrAbused, k, v.Kind())
}

// zoneErr wraps a dictionary error on k; a value of another kind than the
// operation's is limiter.ErrAbused.
func zoneErr(k string, err error) error {
	if errors.Is(err, dict.ErrNotNumber) || errors.Is(err, dict.ErrIsList) || errors.Is(err, dict.ErrWrongShape) {
		return fmt.Errorf("%w: %s: %w", limiter.ErrAbused, k, err)
	}
	return fmt.Errorf("redistier: tiered %s: %w", k, err)
}

// checkCount returns the error of k's count, which IncrInit returned as n:
// nil for n in (0, 2^53], what a count is after one more request; other n
// read the value once, since IncrInit adds to a float too (NaN absorbs it).
func (l *Tiered) checkCount(k string, n int64) error {
	if n > 0 && n <= maxExact {
		return nil
	}
	_, err := l.intAt(k)
	return err
}
