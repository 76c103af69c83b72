package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Count is a fixed window of limit requests per window, as
// lua-resty-limit-traffic's resty.limit.count. A key's window opens at its
// first committed request. A key's state is one dict int, the remaining
// allowance, with the window as its TTL. A decision is one IncrInit, atomic
// across processes.
//
// Its numbers live in its zone. SetLimit and SetWindow change them for
// every process. A changed limit applies to open windows at once. A changed
// window applies to the windows that open after it.
//
// The zero value is not usable: create a Count with NewCount.
type Count struct {
	space
	d    *dict.Dict
	tune tuned[countNums]
}

// countNums is a Count's numbers.
type countNums struct {
	limit  int64
	window time.Duration
}

// countNumsOf derives a Count's numbers from r's Limit and WindowNs. It
// returns NewCount's errors for numbers NewCount refuses.
func countNumsOf(r record) (countNums, error) {
	if r.Limit < 1 || r.Limit > maxExact {
		return countNums{}, fmt.Errorf("%w: %d", ErrBadLimit, r.Limit)
	}
	if r.WindowNs < int64(time.Millisecond) {
		return countNums{}, fmt.Errorf("%w: %v", ErrBadWindow, time.Duration(r.WindowNs))
	}
	return countNums{limit: r.Limit, window: time.Duration(r.WindowNs)}, nil
}

// NewCount returns a fixed window named name over d, of limit requests per
// window. The allowance is a float, as in the Lua module. A float is exact
// up to 2^53, so limit may be at most that.
//
// NewCount returns ErrNilDict if d is nil, and ErrBadName if CheckName
// refuses name. It returns ErrBadLimit if limit is below 1 or above 2^53,
// and ErrBadWindow if window is shorter than a millisecond. It returns
// ErrNameClash if a live Count of this process has the same name and zone
// but another limit or window.
func NewCount(d *dict.Dict, name string, limit int64, window time.Duration) (*Count, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindCount, name)
	if err != nil {
		return nil, err
	}
	built := record{Limit: limit, WindowNs: int64(window)}
	if _, err := countNumsOf(built); err != nil {
		return nil, err
	}
	l := &Count{space: sp, d: d}
	if err := l.claim(d, fmt.Sprintf("limit %d per %v", limit, window)); err != nil {
		return nil, err
	}
	l.tune.init(d, kindCount, name, built, countNumsOf)
	return l, nil
}

// Policy returns limit requests per window.
func (l *Count) Policy() Policy {
	p := l.tune.nums()
	return Policy{Limit: p.limit, Window: p.window}
}

// Incoming is IncomingN of one request.
func (l *Count) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, 0, key, 1, commit)
	return dec, err
}

// IncomingN decides on a request of cost n for key, which takes n from the
// window's allowance. State is the allowance left, and Remaining its floor.
// A key that a Lua writer or IncrFloat left fractional keeps its fraction
// in State. So with a cost of 1, 2.5 becomes 1.5, as in the Lua module.
//
// A committed request is counted even when it is rejected. The stored
// allowance then goes negative, as in the Lua module. A dry run, with
// commit false, counts nothing. Remaining is never negative. ResetAfter is
// the key's TTL, and a rejection's RetryAfter too. A committed request
// reads it with the increment. A dry run's allowed request leaves
// ResetAfter 0: Count.ResetAfter reads it.
//
// A cost above limit is never admitted. It is rejected without reading the
// key, and counts nothing. Its RetryAfter is the longest Duration.
//
// IncomingN returns ErrBadCost if n is below 1. It returns ErrAbused if
// key's value is not a number, ErrBadState if it is a number no Count
// writes, and the dictionary's errors.
func (l *Count) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	err = l.incomingAt(&dec, 0, key, n, commit)
	return dec, err
}

func (l *Count) dictionary() *dict.Dict { return l.d }

// incomingAt ignores now: the window's TTL is the dictionary's to keep.
func (l *Count) incomingAt(dec *Decision, _ int64, key string, cost int64, commit bool) error {
	p := l.tune.nums()
	if cost > p.limit {
		tooCostly(dec)
		return nil
	}
	var kb keyBuf
	var zk string
	// The allowance is a float64: a key a Lua writer or IncrFloat left
	// fractional keeps its fraction (2.5 less 1 is 1.5), as in the Lua
	// module, whose numbers are all doubles.
	var rem float64
	reset := time.Duration(-1) // not read yet
	if commit {
		k := l.zoneKey(l.d, &kb, key)
		zk = k.String()
		n, ttl, out, err := l.d.IncrInitNumTTLKey(k, -cost, p.limit, p.window)
		if out != (dict.Outcome{}) || err != nil {
			err = l.settle(l.d, out, err, func() (o dict.Outcome, err error) {
				n, ttl, o, err = l.d.IncrInitNumTTLKey(k, -cost, p.limit, p.window)
				return o, err
			})
		}
		if err != nil {
			return dictErr(zk, err)
		}
		if err := checkCount(l.d, zk, n, -cost); err != nil {
			return err
		}
		rem, reset = n, ttl
	} else {
		zk = l.key(&kb, key)
		v, found, err := read(l.d, zk, nil, isNumber)
		if err != nil {
			return err
		}
		if why := badCount(v); found && why != "" {
			return badOf(v, why).err(zk)
		}
		rem = float64(p.limit - cost)
		if found {
			rem = v.Float() - float64(cost)
		}
	}
	if rem < 0 {
		if reset < 0 {
			var err error
			if reset, err = l.resetAfter(zk); err != nil {
				return err
			}
		}
		dec.State, dec.RetryAfter, dec.ResetAfter = rem, reset, reset
		return nil
	}
	dec.Allowed, dec.State, dec.Remaining, dec.Committed = true, rem, floorCount(rem), commit
	dec.ResetAfter = max(reset, 0)
	return nil
}

// ResetAfter returns how long until key's window ends and its whole limit
// is back. That is the key's TTL, or 0 if no window is open. ResetAfter
// reads the dictionary once. Package httplimit calls it for its reset
// headers.
//
// ResetAfter returns the dictionary's errors.
func (l *Count) ResetAfter(ctx context.Context, key string) (time.Duration, error) {
	var kb keyBuf
	return l.resetAfter(l.key(&kb, key))
}

// resetAfter is ResetAfter of zone key zk.
func (l *Count) resetAfter(zk string) (time.Duration, error) {
	ttl, err := l.d.TTL(zk)
	if errors.Is(err, dict.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, dictErr(zk, err)
	}
	return ttl, nil
}

// Uncommit is UncommitN of one request.
func (l *Count) Uncommit(ctx context.Context, key string) error { return l.uncommit(key, 1) }

// UncommitN gives a request of cost n back to key's window. The allowance
// is not capped at limit, as in the Lua module, which gives back one. A key
// without a window is left absent: there is nothing to give back.
//
// UncommitN returns ErrBadCost if n is below 1 or above limit. It returns
// ErrAbused if key's value is not a number, ErrBadState if it is a number
// no Count writes, and the dictionary's errors.
func (l *Count) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.tune.nums().limit); err != nil {
		return err
	}
	return l.uncommit(key, n)
}

// Reset deletes key's window. The next request opens a new one.
//
// Reset returns the dictionary's errors.
func (l *Count) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	return resetKey(l.d, l.key(&kb, key))
}

// uncommit is UncommitN of a checked cost.
func (l *Count) uncommit(key string, cost int64) error {
	var kb keyBuf
	zk := l.key(&kb, key)
	n, err := l.d.Incr(zk, cost)
	if errors.Is(err, dict.ErrNotFound) {
		return nil
	}
	if err != nil {
		return incrErr(l.d, zk, err)
	}
	return checkCountInt(l.d, zk, n, cost)
}
