package limiter

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// SlidingWindow approximates a sliding window of limit requests per window
// with two fixed windows, as Cloudflare's and nginx's njs limiters do: the
// count of the previous window, weighted by the part of it the sliding
// window still covers, plus the count of the current one. A key's state is
// 24 bytes (state.go) with a TTL to the end of the next window; a decision is
// one dict.Update, atomic across processes.
// The zero value is not usable: create a SlidingWindow with NewSlidingWindow.
//
// Error bound. The estimate assumes the previous window's requests were
// spread evenly. Whatever their order, (1) no fixed window [k·window,
// (k+1)·window) admits more than limit requests, so (2) no sliding window of
// length window admits more than 2·limit − 1; the worst case is limit
// requests at the very end of one window, after which the next admits
// limit·f requests by the fraction f of it elapsed. Under even traffic the
// estimate is exact; traffic bunched at the start of a window makes it
// reject early instead. The arithmetic is in integer milliseconds: no
// rounding.
type SlidingWindow struct {
	space
	d     *dict.Dict
	limit int64
	w     int64 // window in ms
}

// NewSlidingWindow returns a sliding window named name over d (names.go)
// of limit requests per window; the window is truncated to whole
// milliseconds. Errors: ErrNilDict, ErrBadName, ErrBadLimit for a limit
// below 1, ErrBadWindow for a window shorter than a millisecond, longer
// than maxWindowMs (some 50 years), or one for which limit·window
// overflows, ErrNameClash.
func NewSlidingWindow(d *dict.Dict, name string, limit int64, window time.Duration) (*SlidingWindow, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindSW, name)
	if err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", ErrBadLimit, limit)
	}
	w := window.Milliseconds()
	if w < 1 || w > maxWindowMs || limit > math.MaxInt64/4/w {
		return nil, fmt.Errorf("%w: %v for a limit of %d", ErrBadWindow, window, limit)
	}
	l := &SlidingWindow{space: sp, d: d, limit: limit, w: w}
	if err := l.claim(d, fmt.Sprintf("limit %d per %v", limit, time.Duration(w)*time.Millisecond)); err != nil {
		return nil, err
	}
	l.publish(d, record{Limit: limit, WindowNs: w * int64(time.Millisecond)})
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
	return Policy{Limit: l.limit, Window: time.Duration(l.w) * time.Millisecond}
}

// Incoming is IncomingN of one request.
func (l *SlidingWindow) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, l.d.Now(), key, 1, commit)
	return dec, err
}

// IncomingN decides on a request of cost n for key at the dictionary's
// time and counts it as n requests when commit is true and it is allowed;
// a rejection counts nothing. State is the estimated allowance left after
// the request (negative when rejected).
//
// A cost above limit is never admitted. It is rejected without reading
// the key, with RetryAfter the longest Duration.
//
// Errors: ErrBadCost for n below 1, ErrAbused for a value that is not a
// sliding window's, the dictionary's errors.
func (l *SlidingWindow) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	err = l.incomingAt(&dec, l.d.Now(), key, n, commit)
	return dec, err
}

func (l *SlidingWindow) dictionary() *dict.Dict { return l.d }

func (l *SlidingWindow) incomingAt(dec *Decision, now int64, key string, n int64, commit bool) error {
	if n > l.limit {
		tooCostly(dec)
		return nil
	}
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	win := floorDiv(now, l.w)
	elapsed := min(now-win*l.w, l.w)
	var kb keyBuf
	zk := l.key(&kb, key)
	var pre swState // the state the request is decided on
	if !commit {
		v, found, err := read(l.d, zk, buf[:], isSWState)
		if err != nil {
			return err
		}
		if bad := checkSW(v, now, l.w); found && bad.found() {
			return bad.err(zk)
		}
		if found {
			pre = getSW(v.Bytes())
		}
		pre = l.roll(pre, win)
		l.decide(dec, pre, elapsed, n, false)
		return nil
	}
	var bad foreign
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		var s swState
		if found {
			if bad = checkSW(cur, now, l.w); bad.found() {
				return dict.Value{}, 0, true // leave it as it is
			}
			s = getSW(cur.Bytes())
		}
		pre = l.roll(s, win)
		if l.left(pre, elapsed, n) >= 0 {
			s = pre
			s.cur += n
		} else if !found {
			return cur, 0, false
		} // else rejected: s unchanged
		ttl := (s.window+2)*l.w - now // to the end of the next window
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
	l.decide(dec, pre, elapsed, n, true)
	return nil
}

// roll moves a stored state to window win: the current window becomes the
// previous one, or both are empty after a longer gap. A window in the
// future (a clock that went back) is kept as the current one. Counts are
// clamped to [0, limit], which honest use never leaves, so that the
// arithmetic cannot overflow on a hostile value.
func (l *SlidingWindow) roll(s swState, win int64) swState {
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
func (l *SlidingWindow) left(s swState, elapsed, n int64) int64 {
	return l.limit*l.w - s.prev*(l.w-elapsed) - (s.cur+n)*l.w
}

// decide fills the zero *dec with the Decision on n requests at elapsed
// in state s, which does not count them yet; commit says whether allowed
// ones were counted.
func (l *SlidingWindow) decide(dec *Decision, s swState, elapsed, n int64, commit bool) {
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
func (l *SlidingWindow) retry(s swState, elapsed, n int64) int64 {
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
func (l *SlidingWindow) reset(s swState, elapsed int64) int64 {
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

// UncommitN gives a request of cost n back to key's current window, not
// below 0; a request of an earlier window has no count left to give back.
// Errors: ErrBadCost for n below 1 or above limit, ErrAbused, the
// dictionary's errors.
func (l *SlidingWindow) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.limit); err != nil {
		return err
	}
	return l.uncommit(key, n)
}

// Reset deletes key's windows. Errors: the dictionary's.
func (l *SlidingWindow) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	return resetKey(l.d, l.key(&kb, key))
}

// uncommit is UncommitN of a checked cost.
func (l *SlidingWindow) uncommit(key string, n int64) error {
	now := l.d.Now()
	win := floorDiv(now, l.w)
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	var kb keyBuf
	zk := l.key(&kb, key)
	var bad foreign
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		if !found {
			return cur, 0, false
		}
		if bad = checkSW(cur, now, l.w); bad.found() {
			return dict.Value{}, 0, true // leave it as it is
		}
		s := l.roll(getSW(cur.Bytes()), win)
		s.cur = max(s.cur-n, 0)
		ttl := (s.window+2)*l.w - now
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
