package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Req is a leaky bucket with delay, as lua-resty-limit-traffic's
// resty.limit.req and nginx's limit_req: requests drain at rate per second,
// up to burst requests above the rate wait (Decision.Delay) and more are
// rejected. A key's state is 16 bytes without TTL (state.go), compatible with
// the Lua module's, and every decision reads and writes it under one shard
// lock (dict.Update), so processes sharing the key never overshoot.
type Req struct {
	d      *dict.Dict
	rateM  float64 // milli-requests per second
	burstM float64 // milli-requests
}

// NewReq returns a leaky bucket over d that drains rate requests per second
// and lets burst requests wait; the first request of a key always passes.
// Errors: ErrNilDict, ErrBadRate for a rate that is not positive and
// finite, ErrBadBurst for a negative or non-finite burst.
func NewReq(d *dict.Dict, rate, burst float64) (*Req, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	if !(burst >= 0) || math.IsInf(burst*1000, 0) {
		return nil, fmt.Errorf("%w: %v", ErrBadBurst, burst)
	}
	return &Req{d: d, rateM: rate * 1000, burstM: burst * 1000}, nil
}

// checkRate validates a rate in requests per second.
func checkRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate*1000, 0) {
		return fmt.Errorf("%w: %v requests per second", ErrBadRate, rate)
	}
	return nil
}

// Policy returns the bucket as a quota: burst+1 requests at once, refilled
// in (burst+1)/rate seconds (at least one).
func (l *Req) Policy() Policy {
	n := math.Floor(l.burstM/1000) + 1
	w := seconds(math.Ceil(n * 1000 / l.rateM))
	return Policy{Limit: floorCount(n), Window: max(w, time.Second)}
}

// Incoming decides on a request for key at the dictionary's time. An
// allowed request waits Delay = excess/rate (State is the excess in
// requests); when commit is true it is counted. A rejection writes nothing.
// Errors: ErrAbused for a value that is not a Req's under key, and the
// dictionary's errors.
func (l *Req) Incoming(ctx context.Context, key string, commit bool) (Decision, error) {
	return l.incomingAt(l.d.Now(), key, commit)
}

func (l *Req) dictionary() *dict.Dict { return l.d }

func (l *Req) incomingAt(now int64, key string, commit bool) (Decision, error) {
	var excess float64
	var ok bool
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	if !commit {
		v, _, err := l.d.GetInto(key, buf[:0])
		switch {
		case errors.Is(err, dict.ErrNotFound):
			excess, ok = 0, true
		case err != nil:
			return Decision{}, dictErr(key, err)
		case v.Kind() != dict.KindBytes || v.Len() != reqSize:
			return Decision{}, abused(key, v)
		default:
			excess, ok = l.leak(getReq(v.Bytes()), true, now)
		}
		return l.decide(excess, ok, false), nil
	}
	var bad dict.Value
	err := l.d.Update(key, func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		if found && (cur.Kind() != dict.KindBytes || cur.Len() != reqSize) {
			bad = cur
			return cur, 0, true // leave it as it is
		}
		var s reqState
		if found {
			s = getReq(cur.Bytes())
		}
		excess, ok = l.leak(s, found, now)
		if !ok {
			return cur, 0, found // rejected: leave it as it is
		}
		putReq(buf[:], reqState{excess: truncExcess(excess), last: now})
		return dict.Bytes(buf[:reqSize]), 0, true
	})
	if err != nil {
		return Decision{}, dictErr(key, err)
	}
	if bad.Kind() != dict.KindNone {
		return Decision{}, abused(key, bad)
	}
	return l.decide(excess, ok, true), nil
}

// leak returns the excess in milli-requests that a request at now makes,
// given the stored state (found false: none), and whether it is within the
// burst: resty.limit.req's arithmetic, in its order of operations.
func (l *Req) leak(s reqState, found bool, now int64) (excess float64, ok bool) {
	if !found {
		return 0, true
	}
	elapsed := float64(now) - float64(s.last)
	if elapsed < 0 {
		elapsed = -elapsed // a clock that went back, as the Lua module's abs
	}
	excess = float64(s.excess) - l.rateM*elapsed/1000 + 1000
	if !(excess > 0) {
		excess = 0
	}
	return excess, excess <= l.burstM
}

// decide builds the Decision for an excess in milli-requests.
func (l *Req) decide(excess float64, ok, commit bool) Decision {
	if !ok {
		return Decision{
			State:      excess / 1000,
			RetryAfter: seconds((excess - l.burstM) / l.rateM),
			ResetAfter: seconds(math.Max(excess-1000, 0) / l.rateM),
		}
	}
	delay := seconds(excess / l.rateM)
	return Decision{
		Allowed:    true,
		Delay:      delay,
		State:      excess / 1000,
		Remaining:  floorCount((l.burstM - excess) / 1000),
		ResetAfter: delay,
		Committed:  commit,
	}
}

// truncExcess truncates an excess to the stored integer, saturating.
func truncExcess(excess float64) uint64 {
	if excess >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(excess)
}

// Uncommit gives back one request: the stored excess drops by one request
// (not below zero) and the time of the last request stays. Errors:
// ErrNotFound when key holds no state, ErrAbused, the dictionary's errors.
func (l *Req) Uncommit(ctx context.Context, key string) error {
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	var bad dict.Value
	missing := false
	err := l.d.Update(key, func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		switch {
		case !found:
			missing = true
			return cur, 0, false
		case cur.Kind() != dict.KindBytes || cur.Len() != reqSize:
			bad = cur
			return cur, 0, true
		}
		s := getReq(cur.Bytes())
		s.excess -= min(s.excess, 1000)
		putReq(buf[:], s)
		return dict.Bytes(buf[:reqSize]), 0, true
	})
	switch {
	case err != nil:
		return dictErr(key, err)
	case missing:
		return fmt.Errorf("limiter: uncommit %q: %w", key, ErrNotFound)
	case bad.Kind() != dict.KindNone:
		return abused(key, bad)
	}
	return nil
}

// abused returns ErrAbused for a foreign value under key.
func abused(key string, v dict.Value) error {
	return fmt.Errorf("%w: key %q holds %s of %d bytes", ErrAbused, key, v.Kind(), v.Len())
}

// dictErr wraps an error of the dictionary for key; a list or a
// non-number under the key is ErrAbused.
func dictErr(key string, err error) error {
	if errors.Is(err, dict.ErrIsList) || errors.Is(err, dict.ErrNotNumber) {
		return fmt.Errorf("%w: key %q: %w", ErrAbused, key, err)
	}
	return fmt.Errorf("limiter: key %q: %w", key, err)
}
