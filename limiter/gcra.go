package limiter

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// GCRA is the generic cell rate algorithm, with the results of
// go-redis/redis_rate. It allows rate requests per second, in bursts of up
// to burst. A key's state is one dict int: its theoretical arrival time,
// the TAT, in Unix nanoseconds. Its TTL ends when the TAT is reached.
//
// All arithmetic is in integer nanoseconds, so a fresh key of 10 per second
// with burst 10 reports Remaining 9. redis_rate's float version reports 8,
// since go-redis #3404.
//
// Its numbers live in its zone. SetRate and SetBurst change them for every
// process. A key keeps its TAT, and the next decision uses the new
// interval and tolerance.
//
// The zero value is not usable: create a GCRA with NewGCRA.
type GCRA struct {
	space
	d    *dict.Dict
	tune tuned[gcraNums]
}

// gcraNums is a GCRA's numbers in the form its decisions use.
type gcraNums struct {
	t     int64 // emission interval T: nanoseconds per request
	tau   int64 // burst tolerance τ = T·burst
	burst int64
}

// gcraNumsOf derives a GCRA's numbers from r's Rate and Burst. It returns
// NewGCRA's errors for numbers NewGCRA refuses.
func gcraNumsOf(r record) (gcraNums, error) {
	if err := checkRate(r.Rate); err != nil {
		return gcraNums{}, err
	}
	const year = int64(365 * 24 * time.Hour)
	t := math.Round(float64(time.Second) / r.Rate)
	if !(t >= 1 && t <= float64(year)) {
		return gcraNums{}, fmt.Errorf("%w: %v requests per second is an interval of %v ns", ErrBadRate, r.Rate, t)
	}
	burst := int64(r.Burst)
	if float64(burst) != r.Burst || burst < 1 || burst > 100*year/int64(t) {
		return gcraNums{}, fmt.Errorf("%w: %v", ErrBadBurst, r.Burst)
	}
	return gcraNums{t: int64(t), tau: int64(t) * burst, burst: burst}, nil
}

// NewGCRA returns a GCRA limiter named name over d. It allows rate requests
// per second, in bursts of up to burst requests. A rate of 0.1 is one
// request per ten seconds. The limiter enforces the interval 1/rate,
// rounded to the nearest nanosecond.
//
// NewGCRA returns ErrNilDict if d is nil, and ErrBadName if CheckName
// refuses name. It returns ErrBadRate if rate is not positive and finite,
// or if the interval is not between a nanosecond and a year. It returns
// ErrBadBurst if burst is below 1, or if burst times the interval exceeds
// 100 years. It returns ErrNameClash if a live GCRA of this process has the
// same name and zone but other parameters.
func NewGCRA(d *dict.Dict, name string, rate float64, burst int64) (*GCRA, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindGCRA, name)
	if err != nil {
		return nil, err
	}
	built := record{Rate: rate, Burst: float64(burst)}
	n, err := gcraNumsOf(built)
	if err != nil {
		return nil, err
	}
	l := &GCRA{space: sp, d: d}
	if err := l.claim(d, fmt.Sprintf("an interval of %v, burst %d", time.Duration(n.t), burst)); err != nil {
		return nil, err
	}
	l.tune.init(d, kindGCRA, name, built, gcraNumsOf)
	return l, nil
}

// Policy returns burst requests per burst tolerance. The tolerance is burst
// times the interval, about burst/rate.
func (l *GCRA) Policy() Policy {
	p := l.tune.nums()
	return Policy{Limit: p.burst, Window: time.Duration(p.tau)}
}

// Incoming is IncomingN of one request.
func (l *GCRA) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, l.d.Now(), key, 1, commit)
	return dec, err
}

// IncomingN decides on n requests at once for key, as redis_rate's AllowN
// does. It moves the TAT by n emission intervals. If commit is true and the
// requests are allowed, it counts them. A rejection or a dry run counts
// nothing.
//
// A cost above burst is never admitted. As in redis_rate, RetryAfter is
// then how long until the TAT would allow n, as if the burst were larger.
//
// IncomingN returns ErrBadCost if n is below 1. It returns ErrAbused if
// key's value is not an int, ErrBadState if it is a TAT no GCRA writes, and
// the dictionary's errors.
func (l *GCRA) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	err = l.incomingAt(&dec, l.d.Now(), key, n, commit)
	return dec, err
}

func (l *GCRA) dictionary() *dict.Dict { return l.d }

// incomingAt decides on n requests at now in Unix ms, into the zero *dec.
func (l *GCRA) incomingAt(dec *Decision, now int64, key string, n int64, commit bool) error {
	p := l.tune.nums()
	nowNs := now * int64(time.Millisecond)
	stored := nowNs // the TAT the requests are decided on
	var kb keyBuf
	if !commit {
		zk := l.key(&kb, key)
		v, found, err := read(l.d, zk, nil, isInt)
		if err != nil {
			return err
		}
		if bad := checkTAT(v, nowNs); found && bad.found() {
			return bad.err(zk)
		}
		if found {
			stored = v.Int()
		}
		p.decide(dec, nowNs, stored, n, false)
		return nil
	}
	k := l.zoneKey(l.d, &kb, key)
	zk := k.String()
	// fn decides on the TAT read without a lock (dict.ReviseInt): a
	// rejection takes no lock and writes nothing. It may run again, so each
	// call starts afresh. A TAT in the past means no more than none.
	var bad foreign
	fn := func(cur int64, found bool) (int64, bool, time.Duration) {
		stored, bad = nowNs, foreign{}
		if found {
			if why := badTAT(cur, nowNs); why != "" {
				bad = badOf(dict.Int(cur), why)
				return cur, false, 0 // leave it as it is
			}
			stored = cur
		}
		if newTat, ok := p.next(nowNs, stored, n); ok {
			return newTat, true, time.Duration(newTat - nowNs)
		}
		return cur, false, 0 // rejected: unchanged, TTL and all
	}
	out, err := l.d.ReviseIntKey(k, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = l.settle(l.d, out, err, func() (dict.Outcome, error) { return l.d.ReviseIntKey(k, fn) })
	}
	if err != nil {
		return shapeErr(l.d, zk, err)
	}
	if bad.found() {
		return bad.err(zk)
	}
	p.decide(dec, nowNs, stored, n, true)
	return nil
}

// next returns the TAT after n requests at nowNs given the stored TAT
// (nowNs when there is none), and whether they are allowed.
func (l *gcraNums) next(nowNs, stored, n int64) (newTat int64, ok bool) {
	tat := max(stored, nowNs)
	// newTat = tat + n·T, saturating: n above burst is rejected anyway.
	inc := int64(math.MaxInt64)
	if n <= math.MaxInt64/l.t {
		inc = n * l.t
	}
	newTat = satAdd(tat, inc)
	return newTat, nowNs >= newTat-l.tau
}

// decide fills the zero *dec with the Decision on n requests at nowNs
// given the stored TAT; commit says whether allowed ones were counted.
func (l *gcraNums) decide(dec *Decision, nowNs, stored, n int64, commit bool) {
	tat := max(stored, nowNs)
	newTat, ok := l.next(nowNs, stored, n)
	allowAt := newTat - l.tau
	if !ok {
		dec.RetryAfter = time.Duration(allowAt - nowNs)
		dec.ResetAfter = time.Duration(tat - nowNs)
		return
	}
	rem := (nowNs - allowAt) / l.t
	dec.Allowed = true
	dec.State = float64(rem)
	dec.Remaining = rem
	dec.ResetAfter = time.Duration(newTat - nowNs)
	dec.Committed = commit
}

// satAdd returns a+b for b >= 0, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Uncommit is UncommitN of one request.
func (l *GCRA) Uncommit(ctx context.Context, key string) error { return l.uncommit(key, 1) }

// UncommitN gives n requests back. The TAT moves back by n emission
// intervals, but not before now. A key without state is left so.
//
// UncommitN returns ErrBadCost if n is below 1 or above burst. It returns
// ErrAbused if key's value is not an int, ErrBadState if it is a TAT no
// GCRA writes, and the dictionary's errors.
func (l *GCRA) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.tune.nums().burst); err != nil {
		return err
	}
	return l.uncommit(key, n)
}

// Reset deletes key's TAT.
//
// Reset returns the dictionary's errors.
func (l *GCRA) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	return resetKey(l.d, l.key(&kb, key))
}

// uncommit is UncommitN of a checked cost: n·T is at most τ.
func (l *GCRA) uncommit(key string, n int64) error {
	t := l.tune.nums().t
	nowNs := l.d.Now() * int64(time.Millisecond)
	var kb keyBuf
	zk := l.key(&kb, key)
	var bad foreign
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		if !found {
			return cur, 0, false
		}
		if bad = checkTAT(cur, nowNs); bad.found() {
			return dict.Value{}, 0, true // leave it as it is
		}
		tat := cur.Int() - n*t
		if tat <= nowNs {
			return cur, 0, false
		}
		return dict.Int(tat), time.Duration(tat - nowNs), true
	}
	out, err := l.d.UpdateOutcome(zk, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = l.settle(l.d, out, err, func() (dict.Outcome, error) { return l.d.UpdateOutcome(zk, fn) })
	}
	if err != nil {
		return dictErr(zk, err)
	}
	if bad.found() {
		return bad.err(zk)
	}
	return nil
}
