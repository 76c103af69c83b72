package limiter

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// applyNow makes a change of a limiter's numbers apply to the states open
// at the change (DESIGN.md, section 12). A Count's key holds the allowance
// left, counted down from the limit its window opened with. So each open
// window of the Count gets the limit's change added to its allowance:
// raised from 2 to 1,000, a window that counted 2 has 998 left. A Req's
// state expires once drained at the rate of its last write. So a lowered
// rate gives each state the longer TTL it drains in at the new rate.
// Other kinds and changes leave the states as they are.
func applyNow(d *dict.Dict, kind, name string, before, after record) error {
	switch {
	case kind == kindCount && after.Limit != before.Limit:
		return applyLimit(d, name, after.Limit-before.Limit)
	case kind == kindReq && after.Rate < before.Rate:
		return applyRate(d, name, after)
	}
	return nil
}

// applyLimit adds delta to the allowance of each open window of the Count
// named name.
func applyLimit(d *dict.Dict, name string, delta int64) error {
	keys, err := keysOf(d, kindCount, name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := d.Incr(k, delta); err != nil && !errors.Is(err, dict.ErrNotFound) && !errors.Is(err, dict.ErrNotNumber) {
			return fmt.Errorf("limiter: apply the limit of %s %q to %q: %w", kindCount, name, k, err)
		}
	}
	return nil
}

// applyRate gives each state of the Req named name the TTL it drains in
// at the numbers after. It leaves a state no Req writes as it is.
func applyRate(d *dict.Dict, name string, after record) error {
	p, err := reqNumsOf(after)
	if err != nil { // cannot happen: the caller checked after
		return nil
	}
	keys, err := keysOf(d, kindReq, name)
	if err != nil {
		return err
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
			return fmt.Errorf("limiter: apply the rate of %s %q to %q: %w", kindReq, name, k, err)
		}
	}
	return nil
}

// keysOf returns the zone keys of the limiter of kind named name.
func keysOf(d *dict.Dict, kind, name string) ([]string, error) {
	prefix := kind + "|" + name + "|"
	var keys []string
	err := d.Scan(func(it dict.Item) bool {
		if strings.HasPrefix(it.Key, prefix) {
			keys = append(keys, it.Key)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("limiter: apply the numbers of %s %q: %w", kind, name, err)
	}
	return keys, nil
}
