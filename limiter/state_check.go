package limiter

import (
	"errors"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// The contents a limiter can have written, checked before any arithmetic
// on a state of the right kind and size (values.go rejects the others).
// A state outside them is ErrBadState: the limiter decides nothing on it
// and leaves it as it is. The bounds hold for every limiter of a type, not
// only for one's parameters, so that limiters whose configuration changed
// still read each other's states.
const (
	// maxExact is the largest count a float keeps exact: a Count's or a
	// Conn's number may be a float (a Lua writer, IncrFloat), and one
	// beyond ±maxExact, NaN or infinite is no count.
	maxExact = 1 << 53
	// maxTauNs is the largest burst tolerance NewGCRA accepts: no TAT is
	// further ahead of the time it was written at.
	maxTauNs = int64(100 * 365 * 24 * time.Hour)
	// maxAheadMs is how far ahead of a decision's clock a stored time may
	// be. Processes of a host read one wall clock, each through a coarse
	// clock that lags it by a few milliseconds. A stored time is ahead of
	// now when a process read the clock later, or when the wall clock was
	// stepped back by NTP, an operator or a restored virtual machine. A day
	// covers any step of a host that keeps time. A tighter bound would turn
	// such a step into ErrBadState on every live key until it expires.
	maxAheadMs = int64(24 * time.Hour / time.Millisecond)
	// maxBurstReq is the largest burst NewReq accepts, in requests.
	maxBurstReq = 1e12
	// maxExcessM is the largest excess a Req stores, in milli-requests: an
	// allowed request stores at most the burst.
	maxExcessM = maxBurstReq * 1000
)

// badCount returns what is wrong with a Count's or a Conn's number v, an
// int or a float; "" when it is a count. An int is bound as a float is: no
// Count's allowance (its limit is at most 2^53) nor Conn's requests in
// flight pass ±2^53, and one near ±2^63 would wrap in IncrInit (MinInt64
// under a Count would become MaxInt64, an unlimited key).
func badCount(v dict.Value) string {
	if v.Kind() != dict.KindFloat {
		if n := v.Int(); n > maxExact || n < -maxExact {
			return "an int beyond 2^53"
		}
		return ""
	}
	switch f := v.Float(); {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 0):
		return "an infinity"
	case math.Abs(f) > maxExact:
		return "a float beyond 2^53"
	}
	return ""
}

// checkCount returns ErrBadState when key's number, to which IncrInitNum
// added delta and returned the sum as n, is no count. Count and Conn decide
// with one IncrInitNum, which adds to any number: NaN, an infinity or a
// float beyond 2^54 absorbs the ±1 unchanged, and its sum is NaN, infinite
// or beyond 2^53; an int beyond 2^53 moves by delta (readCount undoes it).
// So n within ±2^53 is a count (a rejection's negative allowance included)
// and costs nothing more; any other n reads the value once.
func checkCount(d *dict.Dict, key string, n float64, delta int64) error {
	if math.Abs(n) <= maxExact {
		return nil
	}
	return readCount(d, key, delta)
}

// checkCountInt is checkCount for the int64 that Incr returned, a float's
// truncated (Incr refuses a float sum beyond int64: incrErr): n in
// (0, 2^53] is a count; any other n reads the value once.
func checkCountInt(d *dict.Dict, key string, n, delta int64) error {
	if n > 0 && n <= maxExact {
		return nil
	}
	return readCount(d, key, delta)
}

// incrErr is the error of Incr's err on a Count's or a Conn's key. Incr
// refuses a float whose sum no int64 holds (NaN, an infinity, beyond
// ±2^63) with dict.ErrNotNumber and leaves it as it was: that float is no
// count, ErrBadState naming it, as checkCount names it after IncrInitNum.
// Any other error, bytes and the like included, is dictErr's.
func incrErr(d *dict.Dict, key string, err error) error {
	if errors.Is(err, dict.ErrNotNumber) {
		if v, _, gerr := d.Get(key); gerr == nil && v.Kind() == dict.KindFloat {
			if why := badCount(v); why != "" {
				return badOf(v, why).err(key)
			}
		}
	}
	return dictErr(key, err)
}

// readCount returns ErrBadState when key's number, to which delta was just
// added, is no count. An int that is none takes delta back, so that the
// value stays as it was (±1s of other processes commute with it); a float
// that is none absorbed it.
func readCount(d *dict.Dict, key string, delta int64) error {
	v, _, err := d.Get(key)
	if errors.Is(err, dict.ErrNotFound) {
		return nil // expired since: nothing to tell
	}
	if err != nil {
		return dictErr(key, err)
	}
	why := badCount(v)
	if why == "" {
		return nil
	}
	bad := badOf(v, why).err(key)
	if v.Kind() == dict.KindInt {
		if _, err := d.Incr(key, -delta); err != nil && !errors.Is(err, dict.ErrNotFound) {
			return errors.Join(bad, dictErr(key, err))
		}
	}
	return bad
}

// checkTAT notes what is wrong with a GCRA's value v at nowNs: nothing
// (not found) for a TAT.
func checkTAT(v dict.Value, nowNs int64) foreign {
	if v.Kind() != dict.KindInt {
		return foreignOf(v)
	}
	if why := badTAT(v.Int(), nowNs); why != "" {
		return badOf(v, why)
	}
	return foreign{}
}

// badTAT returns what is wrong with a GCRA's TAT at nowNs: none is
// negative, nor further ahead than the largest burst tolerance and
// maxAheadMs.
func badTAT(tat, nowNs int64) string {
	switch {
	case tat < 0:
		return "a negative TAT"
	case tat > satAdd(nowNs, maxTauNs+maxAheadMs*int64(time.Millisecond)):
		return "a TAT more than 100 years and a day ahead"
	}
	return ""
}

// reqLatest returns the latest time a Req's state may hold at now in Unix
// ms, maxAheadMs ahead. It is a uint64, so that reqBad's one compare also
// refuses a time before the epoch.
func reqLatest(now int64) uint64 { return uint64(max(satAdd(now, maxAheadMs), 0)) }

// reqBad reports whether a Req's state holds what no Req writes, given
// reqLatest: an excess above maxExcessM, or a time before the epoch or
// after latest. It is two compares, inlined in every decision; badReq
// says which.
func reqBad(s reqState, latest uint64) bool {
	return s.excess > maxExcessM || uint64(s.last) > latest
}

// badReq returns what is wrong with a Req's state at now in Unix ms, as
// reqBad judges it.
func badReq(s reqState, now int64) string {
	switch {
	case s.excess > maxExcessM:
		return "an excess above any burst"
	case s.last < 0:
		return "a time before the epoch"
	case s.last > satAdd(now, maxAheadMs):
		return "a time more than a day ahead"
	}
	return ""
}

// checkSW notes what is wrong with a SlidingWindow's value v at now, for
// windows of w ms: nothing (not found) for a state it can have written.
func checkSW(v dict.Value, now, w int64) foreign {
	if v.Kind() != dict.KindBytes || v.Len() != swSize {
		return foreignOf(v)
	}
	if why := badSW(getSW(v.Bytes()), now, w); why != "" {
		return badOf(v, why)
	}
	return foreign{}
}

// badSW returns what is wrong with a SlidingWindow's state at now in ms,
// for windows of w ms: counts are never negative nor above the largest
// limit NewSlidingWindow accepts for w, and the window starts neither
// before the epoch nor more than maxAheadMs ahead of now.
func badSW(s swState, now, w int64) string {
	maxCount := math.MaxInt64 / 4 / w
	switch {
	case s.cur < 0 || s.prev < 0:
		return "a negative count"
	case s.cur > maxCount || s.prev > maxCount:
		return "a count above any limit"
	case s.window < 0:
		return "a window before the epoch"
	case s.window > floorDiv(satAdd(now, maxAheadMs), w):
		return "a window more than a day ahead"
	}
	return ""
}

// badLease returns what is wrong with a leased Conn's record at now in
// Unix ms. A Conn stores only records that hold slots, at most 2^53 as a
// plain Conn's count, and that expire at most the longest lease after the
// time of their write, which is at most maxAheadMs ahead of now. An
// expired record may stay until the next write drops it.
func badLease(r lease, now int64) string {
	switch {
	case r.slots <= 0:
		return "a lease of no slots"
	case r.slots > maxExact:
		return "a lease of more than 2^53 slots"
	case r.expiry > satAdd(now, maxLeaseMs+maxAheadMs):
		return "a lease that expires more than two days ahead"
	}
	return ""
}
