package limiter

import (
	"errors"
	"fmt"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// A change of a limiter's numbers applies to the states open at the change
// (DESIGN.md, section 12). Two kinds store what the change alters:
//
//   - A Count's key holds the allowance left, counted down from the limit
//     its window opened with. applyOnce claims a change of the limit once,
//     and applyDelta adds it to each open window.
//   - A Req's state expires once drained at the rate of its last write.
//     A lowered rate gives each state the longer TTL it drains in at the
//     new rate: applyLowerRate. Doing it twice does no harm.
//
// Other kinds store what they counted, and decide on the new numbers as
// they are.

// applyDelta adds delta, a change of a Count's limit, to the allowance of
// each open window of the Count named name. Raised from 2 to 1,000, a
// window that counted 2 has 998 left. It changes nothing for another kind
// or when delta is 0. applyOnce calls it once for each change.
func applyDelta(d *dict.Dict, kind, name string, delta int64) error {
	if kind != kindCount || delta == 0 {
		return nil
	}
	keys, err := d.KeysWithPrefix(kind + "|" + name + "|")
	if err != nil {
		return fmt.Errorf("limiter: apply the limit of %s %q: %w", kind, name, err)
	}
	for _, k := range keys {
		if _, err := d.Incr(k, delta); err != nil && !errors.Is(err, dict.ErrNotFound) && !errors.Is(err, dict.ErrNotNumber) {
			return fmt.Errorf("limiter: apply the limit of %s %q to %q: %w", kind, name, k, err)
		}
	}
	return nil
}

// applyLowerRate gives each state of the Req named name the TTL it drains
// in at the numbers after, when after's rate is below before's. It changes
// nothing for another kind or another change. It leaves a state no Req
// writes as it is.
func applyLowerRate(d *dict.Dict, kind, name string, before, after record) error {
	if kind != kindReq || after.Rate >= before.Rate {
		return nil
	}
	p, err := reqNumsOf(after)
	if err != nil { // cannot happen: the caller checked after
		return nil
	}
	keys, err := d.KeysWithPrefix(kind + "|" + name + "|")
	if err != nil {
		return fmt.Errorf("limiter: apply the rate of %s %q: %w", kind, name, err)
	}
	now := d.Now()
	fn := func(b []byte, found bool) (bool, time.Duration) {
		if !found {
			return false, 0
		}
		s := getReq(b)
		if reqBad(s, reqLatest(now)) {
			return true, 0
		}
		return true, p.drainedAfter(s, now)
	}
	for _, k := range keys {
		if _, err := d.MutateOutcome(k, reqSize, fn); err != nil && !errors.Is(err, dict.ErrWrongShape) {
			return fmt.Errorf("limiter: apply the rate of %s %q to %q: %w", kind, name, k, err)
		}
	}
	return nil
}

// applyChange applies a change of the numbers of the limiter of kind named
// name, from before to the numbers in force now, to its open states.
func applyChange(d *dict.Dict, kind, name string, before record) error {
	if err := applyOnce(d, kind, name, nil, before.Limit); err != nil {
		return err
	}
	if after, ok := inForceOf(d, kind, name, nil); ok {
		return applyLowerRate(d, kind, name, before, after)
	}
	return nil
}
