package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Count is a fixed window, as lua-resty-limit-traffic's resty.limit.count:
// limit requests per window, the window anchored at a key's first committed
// request. A key's state is one dict int, the remaining allowance, with the
// window as its TTL; a decision is one IncrInit, atomic across processes.
type Count struct {
	space
	d      *dict.Dict
	limit  int64
	window time.Duration
}

// NewCount returns a fixed window named name over d (names.go) of limit
// requests per window. Errors: ErrNilDict, ErrBadName, ErrBadLimit for a
// limit below 1 or above 2^53 (the allowance is a float, as in the Lua
// module, exact up to 2^53), ErrBadWindow for a window shorter than a
// millisecond, ErrNameClash.
func NewCount(d *dict.Dict, name string, limit int64, window time.Duration) (*Count, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kindCount, name)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > maxExact {
		return nil, fmt.Errorf("%w: %d", ErrBadLimit, limit)
	}
	if window < time.Millisecond {
		return nil, fmt.Errorf("%w: %v", ErrBadWindow, window)
	}
	l := &Count{space: sp, d: d, limit: limit, window: window}
	if err := l.claim(d, fmt.Sprintf("limit %d per %v", limit, window)); err != nil {
		return nil, err
	}
	l.publish(d, record{Limit: limit, WindowNs: int64(window)})
	return l, nil
}

// Policy returns limit requests per window.
func (l *Count) Policy() Policy { return Policy{Limit: l.limit, Window: l.window} }

// Incoming decides on a request for key; State is the remaining allowance,
// with the fraction of a key a Lua writer or IncrFloat left fractional (2.5
// becomes 1.5, as in the Lua module), and Remaining its floor.
// A committed request is counted even when it is rejected (the stored
// allowance goes negative, as in the Lua module); a dry run (commit false)
// counts nothing. Remaining is never negative. A rejection reads the key's
// TTL into RetryAfter and ResetAfter; an allowed request leaves ResetAfter
// 0 (Count.ResetAfter reads it). Errors: ErrAbused for a value that is not a
// number, and the dictionary's errors.
func (l *Count) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	err = l.incomingAt(&dec, 0, key, commit)
	return dec, err
}

func (l *Count) dictionary() *dict.Dict { return l.d }

// incomingAt ignores now: the window's TTL is the dictionary's to keep.
func (l *Count) incomingAt(dec *Decision, _ int64, key string, commit bool) error {
	var kb keyBuf
	zk := l.key(&kb, key)
	// The allowance is a float64: a key a Lua writer or IncrFloat left
	// fractional keeps its fraction (2.5 less 1 is 1.5), as in the Lua
	// module, whose numbers are all doubles.
	var rem float64
	if commit {
		n, out, err := l.d.IncrInitNum(zk, -1, l.limit, l.window)
		if out != (dict.Outcome{}) || err != nil {
			err = l.settle(l.d, out, err, func() (o dict.Outcome, err error) {
				n, o, err = l.d.IncrInitNum(zk, -1, l.limit, l.window)
				return o, err
			})
		}
		if err != nil {
			return dictErr(zk, err)
		}
		if err := checkCount(l.d, zk, n, -1); err != nil {
			return err
		}
		rem = n
	} else {
		v, found, err := read(l.d, zk, nil, isNumber)
		if err != nil {
			return err
		}
		if why := badCount(v); found && why != "" {
			return badOf(v, why).err(zk)
		}
		rem = float64(l.limit) - 1
		if found {
			rem = v.Float() - 1
		}
	}
	if rem < 0 {
		reset, err := l.resetAfter(zk)
		if err != nil {
			return err
		}
		dec.State, dec.RetryAfter, dec.ResetAfter = rem, reset, reset
		return nil
	}
	dec.Allowed, dec.State, dec.Remaining, dec.Committed = true, rem, floorCount(rem), commit
	return nil
}

// ResetAfter returns how long until key's window ends and its whole limit is
// back: the key's TTL, 0 when no window is open. It reads the dictionary
// once; package httplimit calls it for its reset headers.
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

// Uncommit gives one request back to key's window, uncapped, as the Lua
// module does. A key without a window is left absent: nothing to give back.
// Errors: ErrAbused, the dictionary's errors.
func (l *Count) Uncommit(ctx context.Context, key string) error {
	var kb keyBuf
	zk := l.key(&kb, key)
	n, err := l.d.Incr(zk, 1)
	if errors.Is(err, dict.ErrNotFound) {
		return nil
	}
	if err != nil {
		return incrErr(l.d, zk, err)
	}
	return checkCountInt(l.d, zk, n, 1)
}
