package limiter

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/leak"
)

// Req is a leaky bucket with delay, as lua-resty-limit-traffic's
// resty.limit.req and nginx's limit_req. Requests drain at rate per second.
// Up to burst requests above the rate wait for Decision.Delay, and more are
// rejected.
//
// A key's state is 16 bytes, laid out as the Lua module's record. Its TTL
// ends when the bucket has drained and the state means no more than no
// state. The Lua module sets no TTL. So a full zone reclaims drained
// buckets before it evicts a client's live one.
//
// A committing decision reads the state without a lock and decides on a
// copy. A rejection writes nothing. An admission stores the new state
// under the key's lock, and only if the state has not changed since it
// was read: otherwise it decides again. So processes that share a key
// never overshoot. Uncommit rewrites the state under the lock. A dry run
// only reads the state.
//
// The arithmetic is resty.limit.req's, in its units and its order of
// operations. After any sequence of calls, a key's state is the one the Lua
// module would store, bit for bit. The exceptions are that a decision
// stamped earlier than the stored one leaks nothing, and that a drained
// state expires.
//
// Its numbers live in its zone. SetRate and SetBurst change them for every
// process. A key keeps its excess, which the next decision leaks at the new
// rate and compares with the new burst.
//
// The zero value is not usable: create a Req with NewReq.
type Req struct {
	space
	d    *dict.Dict
	tune tuned[reqNums]
}

// reqNums is a Req's numbers in the form its decisions use.
type reqNums struct {
	rateM  float64 // milli-requests per second: rate*1000, as the Lua new()
	burstM float64 // milli-requests: burst*1000
	most   int64   // the largest cost admitted at once: floor(burst)+1
}

// reqNumsOf derives a Req's numbers from r's Rate and Burst. It returns
// NewReq's errors for numbers NewReq refuses.
func reqNumsOf(r record) (reqNums, error) {
	if err := checkRate(r.Rate); err != nil {
		return reqNums{}, err
	}
	if !(r.Burst >= 0 && r.Burst <= maxBurstReq) {
		return reqNums{}, fmt.Errorf("%w: %v", ErrBadBurst, r.Burst)
	}
	n := reqNums{rateM: r.Rate * 1000, burstM: r.Burst * 1000}
	n.most = floorCount(math.Floor(n.burstM/1000) + 1)
	return n, nil
}

// NewReq returns a leaky bucket named name over d. It drains rate requests
// per second and lets burst requests wait. The first request of a key
// always passes.
//
// NewReq returns ErrNilDict if d is nil, ErrBadName if CheckName refuses
// name, and ErrBadRate if rate is not positive and finite. It returns
// ErrBadBurst if burst is negative or above 1e12 requests. It returns
// ErrNameClash if a live Req of this process has the same name and zone but
// other parameters.
func NewReq(d *dict.Dict, name string, rate, burst float64) (*Req, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindReq, name)
	if err != nil {
		return nil, err
	}
	built := record{Rate: rate, Burst: burst}
	if _, err := reqNumsOf(built); err != nil {
		return nil, err
	}
	l := &Req{space: sp, d: d}
	if err := l.claim(d, fmt.Sprintf("rate %v/s, burst %v", rate, burst)); err != nil {
		return nil, err
	}
	l.tune.init(d, kindReq, name, built, reqNumsOf)
	return l, nil
}

// checkRate validates a rate in requests per second.
func checkRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate*1000, 0) {
		return fmt.Errorf("%w: %v requests per second", ErrBadRate, rate)
	}
	return nil
}

// Policy returns the bucket as a quota of burst+1 requests at once. They
// refill in (burst+1)/rate seconds, rounded up to a whole number of
// seconds.
func (l *Req) Policy() Policy {
	p := l.tune.nums()
	n := math.Floor(p.burstM/1000) + 1
	w := seconds(math.Ceil(n * 1000 / p.rateM))
	return Policy{Limit: floorCount(n), Window: max(w, time.Second)}
}

// Incoming is IncomingN of one request.
func (l *Req) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, l.d.Now(), key, 1, commit)
	return dec, err
}

// IncomingN decides on a request of cost n for key at the dictionary's
// time. It adds n requests to the bucket's excess. It adds the first as
// resty.limit.req adds one, after the leak, and then n−1 more. State is the
// excess in requests. An allowed request waits Delay, the excess divided by
// rate. If commit is true, an allowed request is counted. A rejection
// writes nothing.
//
// A cost above burst+1 is never admitted. It is rejected without reading
// the key, with RetryAfter the longest Duration.
//
// IncomingN returns ErrBadCost if n is below 1. It returns ErrAbused if
// key's value is not a Req's, ErrBadState if it holds what no Req writes,
// and the dictionary's errors.
func (l *Req) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	err = l.incomingAt(&dec, l.d.Now(), key, n, commit)
	return dec, err
}

func (l *Req) dictionary() *dict.Dict { return l.d }

func (l *Req) incomingAt(dec *Decision, now int64, key string, n int64, commit bool) error {
	p := l.tune.nums()
	if n > p.most {
		tooCostly(dec)
		return nil
	}
	excess, ok, err := l.step(p, now, key, n, commit)
	if err != nil {
		return err
	}
	p.decide(dec, excess, n, ok, commit)
	return nil
}

// step makes the decision on cost n at now: the excess in milli-requests
// with the request, and whether it is allowed; a commit stores it when it
// is.
func (l *Req) step(p *reqNums, ms int64, key string, n int64, commit bool) (excess float64, ok bool, err error) {
	now := luaMs(ms)
	var kb keyBuf
	if !commit {
		zk := l.key(&kb, key)
		buf := bufs.Get().(*[bufSize]byte)
		defer bufs.Put(buf)
		v, found, err := read(l.d, zk, buf[:], isReqState)
		if err != nil || !found {
			return 0, err == nil, err
		}
		s := getReq(v.Bytes())
		if reqBad(s, reqLatest(ms)) {
			return 0, false, badOf(v, badReq(s, ms)).err(zk)
		}
		excess, ok = p.leak(s, true, now, n)
		return excess, ok, nil
	}
	k := l.zoneKey(l.d, &kb, key)
	zk := k.String()
	// fn decides on a copy of the state, read without a lock (dict.Revise).
	// A rejection takes no lock and writes nothing. An admission stores the
	// state under the key's lock if it is still the one fn was given;
	// otherwise fn runs again on the new one. An allowed request's state expires
	// when it has drained (drainedAfter), so the zone can tell it means
	// nothing from then on. A state no Req writes is left as it is, and
	// excess is -1, which no decision computes.
	fn := func(v dict.State, found bool) (dict.State, bool, time.Duration) {
		var s reqState
		if found {
			s = reqOfState(v)
			if reqBad(s, reqLatest(ms)) {
				excess = -1
				return v, false, 0
			}
		}
		excess, ok = p.leak(s, found, now, n)
		if !ok {
			return v, false, 0
		}
		// The time never goes back either, or the next decision would
		// leak the lag again.
		last := truncMs(now)
		if found {
			last = max(last, s.last)
		}
		st := reqState{excess: truncExcess(excess), last: last}
		return stateOfReq(st), true, p.drainedAfter(st, ms)
	}
	out, err := l.d.ReviseKey(k, reqSize, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = l.settle(l.d, out, err, func() (dict.Outcome, error) { return l.d.ReviseKey(k, reqSize, fn) })
	}
	if err != nil {
		return 0, false, shapeErr(l.d, zk, err)
	}
	if excess < 0 {
		return 0, false, l.badState(zk, ms)
	}
	return excess, ok, nil
}

// badState returns the error of zone key zk, whose state a decision at
// ms found that no Req writes. It reads the state again to say what is
// wrong with it, off the decision's path.
func (l *Req) badState(zk string, ms int64) error {
	var buf [reqSize]byte
	why := "a state no Req writes"
	if v, _, err := l.d.GetInto(zk, buf[:0]); err == nil && isReqState(v) {
		if s := getReq(v.Bytes()); reqBad(s, reqLatest(ms)) {
			why = badReq(s, ms)
		}
	}
	return foreign{kind: dict.KindBytes, n: reqSize, bad: why}.err(zk)
}

// leak returns the excess in milli-requests that a request of cost n at
// now (luaMs) makes, given the stored state (found false: none), and
// whether it is within the burst: resty.limit.req's excess −
// rate·|elapsed|/1000 + 1000, not below 0, in that order, and then
// (n−1)·1000 on its truncation, as n requests at one time would make. A now before the
// stored time leaks nothing, as in nginx's limit_req: processes read their
// clocks before taking the shard lock, and their coarse clocks lag by
// different amounts, so a decision often comes after a later one; the Lua
// module's |elapsed| would leak that lag.
func (l *reqNums) leak(s reqState, found bool, now float64, n int64) (excess float64, ok bool) {
	if found {
		elapsed := now - float64(s.last)
		if elapsed < 0 {
			elapsed = 0 // an earlier clock than the last decision's
		}
		// The conversions keep each product rounded on its own: a fused
		// multiply-add would round once and differ from the Lua module.
		excess = float64(s.excess) - float64(l.rateM*elapsed)/1000 + 1000
		if !(excess > 0) {
			excess = 0
		}
	}
	if n > 1 {
		// n−1 more requests at the same time: each finds the excess the
		// one before stored, truncated. n ≤ most keeps the sum exact.
		excess = float64(truncExcess(excess)) + float64(n-1)*1000
	}
	return excess, excess <= l.burstM
}

// drainedAfter returns how long after now (Unix ms) state s stops meaning
// anything: from then on every request finds excess − rate·elapsed + 1000
// at most 0, and so decides and stores exactly as on no state at all. That
// is at last + (excess+1000)/rate; a millisecond more covers the rounding
// of leak's arithmetic. It is at least a millisecond, and saturates at
// maxTTL.
func (l *reqNums) drainedAfter(s reqState, now int64) time.Duration {
	drain := math.Ceil((float64(s.excess) + 1000) * 1000 / l.rateM) // ms
	at := float64(s.last) + drain + 1
	if !(at-float64(now) < float64(maxTTL/time.Millisecond)) {
		return maxTTL
	}
	return time.Duration(max(int64(at)-now, 1)) * time.Millisecond
}

// maxTTL is the longest TTL a limiter sets: a century, beyond any state's
// meaning and within time.Duration.
const maxTTL = 100 * 365 * 24 * time.Hour

// luaMs returns Unix ms as resty.limit.req reads the time: ngx.now()*1000,
// where ngx.now() is sec + msec/1000.0 in doubles. For times of this century
// it is ms exactly; near the epoch (an injected clock) it can be a hair off,
// 1000.9999999999999 for 1001, and the Lua module computes with that.
func luaMs(ms int64) float64 {
	sec, msec := ms/1000, ms%1000
	if msec < 0 {
		sec, msec = sec-1, msec+1000
	}
	return float64(float64(sec)+msecFrac[msec]) * 1000
}

// msecFrac holds msec/1000.0 for each msec of a second, as ngx.now()
// computes it: the same doubles, without a division per decision.
var msecFrac = func() (f [1000]float64) {
	for i := range f {
		f[i] = float64(i) / 1000
	}
	return f
}()

// truncMs returns a luaMs time as the record stores it: truncated, as the
// Lua module's store into its uint64_t field; never below 0.
func truncMs(now float64) int64 {
	if !(now > 0) {
		return 0
	}
	if now >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(now)
}

// decide fills the zero *dec with the Decision for an excess in
// milli-requests, the request's own cost n included. A stored excess E is
// back to a fresh key's allowance after (E+1000)/rate, when the next
// request's E − leak + 1000 is 0: so ResetAfter is (excess+1000)/rate for
// an allowed request (E = excess, a dry run counting the request as a
// commit would), and (excess − (n−1)·1000)/rate for a rejected one, which
// stores nothing (E = excess − n·1000 after the leak). Delay stays the Lua
// module's excess/rate.
func (l *reqNums) decide(dec *Decision, excess float64, n int64, ok, commit bool) {
	dec.State = excess / 1000
	if !ok {
		dec.RetryAfter = l.leakTime(excess - l.burstM)
		if n > 1 {
			dec.ResetAfter = l.leakTime(excess - float64(n-1)*1000)
		} else {
			dec.ResetAfter = l.leakTime(excess)
		}
		return
	}
	dec.Allowed = true
	dec.Delay = l.leakTime(excess)
	dec.Remaining = floorCount((l.burstM - excess) / 1000)
	dec.ResetAfter = l.leakTime(excess + 1000)
	dec.Committed = commit
}

// leakTime returns how long the bucket takes to leak excess
// milli-requests (leak.Time).
func (l *reqNums) leakTime(excess float64) time.Duration { return leak.Time(excess, l.rateM) }

// truncExcess truncates an excess to the stored integer, saturating.
func truncExcess(excess float64) uint64 {
	if excess >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(excess)
}

// Uncommit is UncommitN of one request.
func (l *Req) Uncommit(ctx context.Context, key string) error { return l.uncommit(key, 1) }

// UncommitN gives back a request of cost n. The stored excess drops by n
// requests, but not below zero. The time of the last request stays.
//
// UncommitN returns ErrBadCost if n is below 1 or above burst+1, and
// ErrNotFound if key holds no state, as once it has drained. It returns
// ErrAbused if key's value is not a Req's, ErrBadState if it holds what no
// Req writes, and the dictionary's errors.
func (l *Req) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.tune.nums().most); err != nil {
		return err
	}
	return l.uncommit(key, n)
}

// Reset deletes key's state.
//
// Reset returns the dictionary's errors.
func (l *Req) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	return resetKey(l.d, l.key(&kb, key))
}

// uncommit is UncommitN of a checked cost.
func (l *Req) uncommit(key string, n int64) error {
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	var kb keyBuf
	zk := l.key(&kb, key)
	now := l.d.Now()
	var bad foreign
	missing := false
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		missing, bad = false, foreign{}
		switch {
		case !found:
			missing = true
			return dict.Value{}, 0, true // leave it: an expired state stays for a clock that goes back
		case cur.Kind() != dict.KindBytes || cur.Len() != reqSize:
			bad = foreignOf(cur)
			return dict.Value{}, 0, true // leave it as it is
		}
		s := getReq(cur.Bytes())
		if reqBad(s, reqLatest(now)) {
			bad = badOf(cur, badReq(s, now))
			return dict.Value{}, 0, true // leave it as it is
		}
		s.excess -= min(s.excess, uint64(n)*1000) // n ≤ most: no overflow
		putReq(buf[:], s)
		return dict.Bytes(buf[:reqSize]), l.tune.nums().drainedAfter(s, now), true
	}
	out, err := l.d.UpdateOutcome(zk, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = l.settle(l.d, out, err, func() (dict.Outcome, error) { return l.d.UpdateOutcome(zk, fn) })
	}
	switch {
	case err != nil:
		return dictErr(zk, err)
	case missing:
		return fmt.Errorf("limiter: uncommit %q: %w", strings.Clone(zk), ErrNotFound)
	case bad.found():
		return bad.err(zk)
	}
	return nil
}
