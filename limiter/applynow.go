package limiter

import (
	"errors"
	"fmt"

	"github.com/shmzone/shmzone/dict"
)

// applyDelta makes a change of a Count's limit apply to the windows open
// at the change (DESIGN.md, section 12). A Count's key holds the allowance
// left, counted down from the limit its window opened with. So each open
// window of the Count gets delta, the limit's change, added to its
// allowance. Raised from 2 to 1,000, a window that counted 2 has 998 left.
// Other kinds store what they counted, and decide on the new numbers as
// they are. It changes nothing when delta is 0. applyOnce calls it once for
// each change.
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
