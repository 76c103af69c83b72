package limiter

import (
	"fmt"
	"math"

	"github.com/shmzone/shmzone/dict"
)

// Costs. IncomingN charges a request of cost n as n requests, in one
// decision: Req adds n requests to its bucket's excess, Count takes n from
// its window's allowance, SlidingWindow counts n, GCRA moves its TAT by n
// emission intervals, and Conn takes n slots. A cost above the most a
// limiter admits at once is rejected at once (tooCostly); GCRA computes
// its rejection as redis_rate does. A cost below 1 is ErrBadCost.

// checkCost returns ErrBadCost for a cost below 1.
func checkCost(n int64) error {
	if n < 1 {
		return fmt.Errorf("%w: %d", ErrBadCost, n)
	}
	return nil
}

// checkUncommit returns ErrBadCost for a cost below 1 or above most, the
// largest cost the limiter admits at once.
func checkUncommit(n, most int64) error {
	if n < 1 || n > most {
		return fmt.Errorf("%w: %d, not 1 to %d", ErrBadCost, n, most)
	}
	return nil
}

// tooCostly fills the zero *dec with the rejection of a cost the limiter
// never admits: RetryAfter is the longest Duration, the other fields zero.
// It reads and writes nothing.
func tooCostly(dec *Decision) { dec.RetryAfter = math.MaxInt64 }

// resetKey deletes zone key zk, a limiter's state. Errors: the
// dictionary's, wrapped with the key.
func resetKey(d *dict.Dict, zk string) error {
	if err := d.Delete(zk); err != nil {
		return dictErr(zk, err)
	}
	return nil
}
