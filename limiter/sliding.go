package limiter

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// SlidingWindow approximates a sliding window of limit requests per window
// with two fixed windows, as Cloudflare's and nginx's njs limiters do. It
// weighs the previous window's count by the part of it that the sliding
// window still covers. It adds the current window's count. The fixed
// windows start at multiples of window since the Unix epoch.
//
// A key's state is 24 bytes, with a TTL to the end of the next window. A
// decision is one dict.Update, atomic across processes. The arithmetic is
// in integer milliseconds, with no rounding.
//
// The estimate assumes that the previous window's requests were spread
// evenly. Under even traffic it is exact. Traffic bunched at the start of a
// window makes it reject early. Whatever the order of requests, no fixed
// window admits more than limit requests. So no sliding window of length
// window admits more than 2·limit − 1. The worst case is limit requests at
// the very end of one window. The next window then admits limit·f requests
// by the fraction f of it elapsed.
//
// Its numbers live in its zone. SetLimit changes the limit for every
// process, and the next decision weighs the counts it has against it.
//
// The zero value is not usable: create a SlidingWindow with
// NewSlidingWindow.
type SlidingWindow struct {
	space
	d    *dict.Dict
	tune tuned[swNums]
}

// swNums is a SlidingWindow's numbers.
type swNums struct {
	limit int64
	w     int64 // window in ms
}

// swNumsOf derives a SlidingWindow's numbers from r's Limit and WindowNs.
// It returns NewSlidingWindow's errors for numbers it refuses.
func swNumsOf(r record) (swNums, error) {
	if r.Limit < 1 {
		return swNums{}, fmt.Errorf("%w: %d", ErrBadLimit, r.Limit)
	}
	w := time.Duration(r.WindowNs).Milliseconds()
	if w < 1 || w > maxWindowMs || r.Limit > math.MaxInt64/4/w {
		return swNums{}, fmt.Errorf("%w: %v for a limit of %d", ErrBadWindow, time.Duration(r.WindowNs), r.Limit)
	}
	return swNums{limit: r.Limit, w: w}, nil
}

// NewSlidingWindow returns a sliding window named name over d, of limit
// requests per window. It truncates window to whole milliseconds.
//
// NewSlidingWindow returns ErrNilDict if d is nil, ErrBadName if CheckName
// refuses name, and ErrBadLimit if limit is below 1. It returns
// ErrBadWindow if window is shorter than a millisecond or longer than about
// 50 years. It also returns ErrBadWindow if limit times window would
// overflow. It returns ErrNameClash if a live SlidingWindow of this process
// has the same name and zone but other parameters.
func NewSlidingWindow(d *dict.Dict, name string, limit int64, window time.Duration) (*SlidingWindow, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindSW, name)
	if err != nil {
		return nil, err
	}
	w := window.Milliseconds()
	built := record{Limit: limit, WindowNs: w * int64(time.Millisecond)}
	if _, err := swNumsOf(record{Limit: limit, WindowNs: int64(window)}); err != nil {
		return nil, err
	}
	l := &SlidingWindow{space: sp, d: d}
	if err := l.claim(d, fmt.Sprintf("limit %d per %v", limit, time.Duration(w)*time.Millisecond)); err != nil {
		return nil, err
	}
	l.tune.init(d, kindSW, name, built, swNumsOf)
	return l, nil
}

// maxWindowMs is the longest window, in ms. A state's TTL runs to the end
// of the window after its own, (window+2)·w − now: at most 2·w, and at most
// 2·w + maxAheadMs for a window ahead of a lagging clock (badSW refuses one
// further ahead). So it stays within maxTTL, and its conversion to a
// Duration in ns (292 years) cannot wrap negative.
const maxWindowMs = (int64(maxTTL/time.Millisecond) - maxAheadMs) / 2

// Policy returns limit requests per window.
func (l *SlidingWindow) Policy() Policy {
	p := l.tune.nums()
	return Policy{Limit: p.limit, Window: time.Duration(p.w) * time.Millisecond}
}

// Incoming is IncomingN of one request.
func (l *SlidingWindow) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, l.d.Now(), key, 1, commit)
	return dec, err
}

// IncomingN decides on a request of cost n for key at the dictionary's
// time. If commit is true and the request is allowed, it counts it as n
// requests. A rejection counts nothing. State is the estimated allowance
// left after the request. It is negative if the request does not fit.
//
// A cost above limit is never admitted. It is rejected without reading the
// key, with RetryAfter the longest Duration.
//
// IncomingN returns ErrBadCost if n is below 1. It returns ErrAbused if
// key's value is not a sliding window's, ErrBadState if it holds what no
// SlidingWindow writes, and the dictionary's errors.
func (l *SlidingWindow) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	err = l.incomingAt(&dec, l.d.Now(), key, n, commit)
	return dec, err
}

func (l *SlidingWindow) dictionary() *dict.Dict { return l.d }

func (l *SlidingWindow) incomingAt(dec *Decision, now int64, key string, n int64, commit bool) error {
	p := l.tune.nums()
	if n > p.limit {
		tooCostly(dec)
		return nil
	}
	win := floorDiv(now, p.w)
	elapsed := min(now-win*p.w, p.w)
	var kb keyBuf
	var pre swState // the state the request is decided on
	if !commit {
		zk := l.key(&kb, key)
		buf := bufs.Get().(*[bufSize]byte)
		defer bufs.Put(buf)
		v, found, err := read(l.d, zk, buf[:], isSWState)
		if err != nil {
			return err
		}
		if bad := checkSW(v, now, p.w); found && bad.found() {
			return bad.err(zk)
		}
		if found {
			pre = getSW(v.Bytes())
		}
		pre = p.roll(pre, win)
		p.decide(dec, pre, elapsed, n, false)
		return nil
	}
	k := l.zoneKey(l.d, &kb, key)
	zk := k.String()
	// fn decides on a copy of the state, read without a lock
	// (dict.Revise): a rejection takes no lock and writes nothing. It may
	// run again, so each call starts afresh.
	var bad foreign
	fn := func(v dict.State, found bool) (dict.State, bool, time.Duration) {
		var s swState
		bad = foreign{}
		if found {
			s = swOfState(v)
			if why := badSW(s, now, p.w); why != "" {
				bad = foreign{kind: dict.KindBytes, n: swSize, bad: why}
				return v, false, 0 // leave it as it is
			}
		}
		pre = p.roll(s, win)
		if p.left(pre, elapsed, n) < 0 {
			return v, false, 0 // rejected: unchanged, TTL and all
		}
		s = pre
		s.cur += n
		ttl := (s.window+2)*p.w - now // to the end of the next window
		if ttl <= 0 {
			return v, false, 0
		}
		return stateOfSW(s), true, time.Duration(ttl) * time.Millisecond
	}
	out, err := l.d.ReviseKey(k, swSize, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = l.settle(l.d, out, err, func() (dict.Outcome, error) { return l.d.ReviseKey(k, swSize, fn) })
	}
	if err != nil {
		return shapeErr(l.d, zk, err)
	}
	if bad.found() {
		return bad.err(zk)
	}
	p.decide(dec, pre, elapsed, n, true)
	return nil
}

// roll moves a stored state to window win: the current window becomes the
// previous one, or both are empty after a longer gap. A window in the
// future (a clock that went back) is kept as the current one. Counts are
// clamped to [0, limit], which honest use never leaves, so that the
// arithmetic cannot overflow on a hostile value.
func (l *swNums) roll(s swState, win int64) swState {
	s.cur = min(max(s.cur, 0), l.limit)
	s.prev = min(max(s.prev, 0), l.limit)
	switch {
	case s.window >= win:
		return s
	case s.window == win-1:
		return swState{window: win, prev: s.cur}
	}
	return swState{window: win}
}

// left returns the allowance left after n more requests elapsed ms into
// the state's window, in units of 1/window requests: they are allowed when
// it is not negative. The estimate is prev·(w−elapsed) + cur·w. Counts and
// n are at most limit (roll), so the products stay below 2^62.
func (l *swNums) left(s swState, elapsed, n int64) int64 {
	return l.limit*l.w - s.prev*(l.w-elapsed) - (s.cur+n)*l.w
}

// decide fills the zero *dec with the Decision on n requests at elapsed
// in state s, which does not count them yet; commit says whether allowed
// ones were counted.
func (l *swNums) decide(dec *Decision, s swState, elapsed, n int64, commit bool) {
	left := l.left(s, elapsed, n)
	dec.State = float64(left) / float64(l.w)
	if left < 0 {
		dec.RetryAfter = time.Duration(l.retry(s, elapsed, n)) * time.Millisecond
		dec.ResetAfter = time.Duration(l.reset(s, elapsed)) * time.Millisecond
		return
	}
	s.cur += n
	dec.Allowed = true
	dec.Remaining = left / l.w
	dec.ResetAfter = time.Duration(l.reset(s, elapsed)) * time.Millisecond
	dec.Committed = commit
}

// retry returns the ms until a rejected request of cost n would be
// allowed: later in this window, when the previous window's weight has
// dropped enough, or in the next one, when this window's count has.
func (l *swNums) retry(s swState, elapsed, n int64) int64 {
	w := l.w
	if s.cur+n <= l.limit {
		// prev·(w−e) > (limit−cur−n)·w ≥ 0, so prev > 0 here.
		at := w - (l.limit-s.cur-n)*w/s.prev
		return max(at-elapsed, 1)
	}
	// cur > limit−n ≥ 0, so cur > 0 here.
	at := w - (l.limit-n)*w/s.cur
	return w - elapsed + at
}

// reset returns the ms until the state has no requests left in it.
func (l *swNums) reset(s swState, elapsed int64) int64 {
	switch {
	case s.cur > 0:
		return 2*l.w - elapsed
	case s.prev > 0:
		return l.w - elapsed
	}
	return 0
}

// floorDiv is a/b rounded toward minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Uncommit is UncommitN of one request.
func (l *SlidingWindow) Uncommit(ctx context.Context, key string) error { return l.uncommit(key, 1) }

// UncommitN gives a request of cost n back to key's current window. The
// window's count does not go below 0. A request of an earlier window has no
// count left to give back.
//
// UncommitN returns ErrBadCost if n is below 1 or above limit. It returns
// ErrAbused if key's value is not a sliding window's, ErrBadState if it
// holds what no SlidingWindow writes, and the dictionary's errors.
func (l *SlidingWindow) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.tune.nums().limit); err != nil {
		return err
	}
	return l.uncommit(key, n)
}

// Reset deletes key's windows.
//
// Reset returns the dictionary's errors.
func (l *SlidingWindow) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	return resetKey(l.d, l.key(&kb, key))
}

// uncommit is UncommitN of a checked cost.
func (l *SlidingWindow) uncommit(key string, n int64) error {
	p := l.tune.nums()
	now := l.d.Now()
	win := floorDiv(now, p.w)
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	var kb keyBuf
	zk := l.key(&kb, key)
	var bad foreign
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		if !found {
			return cur, 0, false
		}
		if bad = checkSW(cur, now, p.w); bad.found() {
			return dict.Value{}, 0, true // leave it as it is
		}
		s := p.roll(getSW(cur.Bytes()), win)
		s.cur = max(s.cur-n, 0)
		ttl := (s.window+2)*p.w - now
		if ttl <= 0 {
			return cur, 0, false
		}
		putSW(buf[:], s)
		return dict.Bytes(buf[:swSize]), time.Duration(ttl) * time.Millisecond, true
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
