package limiter

import (
	"context"
	"errors"
	"fmt"
)

// Combine decides on one request under several limiters at once, as
// resty.limit.traffic.combine does. It decides key i under limiter i. The
// request is counted by all of them, or by none that can be undone. The
// limiters of this package all decide at one time. Combine reads that time
// once, from the first one's dictionary.
//
// In pass 1, Combine asks every limiter and commits only the last. A
// rejection or an error there returns at once, with nothing undone. The
// last limiter may have counted a request it rejects, as a Count does. In
// pass 2, it commits limiters 1 to n−1 in order. If limiter i rejects or
// fails, Combine uncommits limiters 1 to i−1 and the last. It then returns
// limiter i's Decision.
//
// An allowed Decision has the largest Delay and ResetAfter, and the
// smallest Remaining. Its State is the last limiter's. A rejection is the
// rejecting limiter's Decision.
//
// Combine returns ErrMismatch if the slices differ in length, are empty or
// hold a nil limiter. It returns a limiter's error, joined with Uncommit's
// errors but for ErrNotFound. A state that expired between the passes, such
// as a drained Req's, has nothing to give back. The rejection then stays a
// rejection, as in the Lua combine, which ignores uncommit's errors.
func Combine(ctx context.Context, ls []Limiter, keys []string) (Decision, error) {
	return combine(ctx, ls, keys, 1)
}

// CombineN is Combine of a request of cost cost. Each limiter decides on
// cost as its IncomingN does. A limiter that must be undone gets cost back
// through its UncommitN.
//
// CombineN returns ErrBadCost if cost is below 1, and the errors of
// Combine.
func CombineN(ctx context.Context, ls []Limiter, keys []string, cost int64) (Decision, error) {
	if err := checkCost(cost); err != nil {
		return Decision{}, err
	}
	return combine(ctx, ls, keys, cost)
}

// combine is CombineN of a checked cost.
func combine(ctx context.Context, ls []Limiter, keys []string, cost int64) (Decision, error) {
	n := len(ls)
	if n == 0 || n != len(keys) {
		return Decision{}, fmt.Errorf("%w: %d limiters, %d keys", ErrMismatch, n, len(keys))
	}
	var now int64
	haveNow := false
	for i, l := range ls {
		if l == nil {
			return Decision{}, fmt.Errorf("%w: limiter %d is nil", ErrMismatch, i)
		}
		if lo, ok := l.(local); ok && !haveNow {
			now, haveNow = lo.dictionary().Now(), true
		}
	}
	out := Decision{Allowed: true, Remaining: -1, Committed: true}
	for i := range n {
		var d Decision
		err := incomingAt(ctx, &d, ls[i], now, keys[i], cost, i == n-1)
		if err != nil || !d.Allowed {
			return d, err
		}
		if i == n-1 {
			merge(&out, d)
			out.State = d.State
		}
	}
	for i := range n - 1 {
		var d Decision
		err := incomingAt(ctx, &d, ls[i], now, keys[i], cost, true)
		if err != nil || !d.Allowed {
			var errs []error
			for j := range i {
				errs = append(errs, uncommitN(ctx, ls[j], keys[j], cost))
			}
			errs = append(errs, uncommitN(ctx, ls[n-1], keys[n-1], cost))
			if uerr := errors.Join(errs...); uerr != nil {
				err = errors.Join(err, fmt.Errorf("limiter: combine: uncommit: %w", uerr))
			}
			return d, err
		}
		merge(&out, d)
	}
	return out, nil
}

// uncommitN undoes a committed request of cost n on l for Combine;
// ErrNotFound, a state that expired meanwhile, is no error.
func uncommitN(ctx context.Context, l Limiter, key string, n int64) error {
	if err := l.UncommitN(ctx, key, n); !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// incomingAt asks l about a request of cost n into the zero *dec, at now
// when it is a limiter of this package.
func incomingAt(ctx context.Context, dec *Decision, l Limiter, now int64, key string, n int64, commit bool) error {
	if handled, err := incomingLocal(dec, l, now, key, n, commit); handled {
		return err
	}
	d, err := l.IncomingN(ctx, key, n, commit)
	*dec = d
	return err
}

// incomingLocal is local's incomingAt for a limiter of this package;
// handled is false for another. It calls each by its own type: a call
// through the interface would move dec to the heap, as the compiler cannot
// see what an interface's method keeps.
func incomingLocal(dec *Decision, l Limiter, now int64, key string, n int64, commit bool) (handled bool, err error) {
	switch lo := l.(type) {
	case *Req:
		return true, lo.incomingAt(dec, now, key, n, commit)
	case *Count:
		return true, lo.incomingAt(dec, now, key, n, commit)
	case *GCRA:
		return true, lo.incomingAt(dec, now, key, n, commit)
	case *SlidingWindow:
		return true, lo.incomingAt(dec, now, key, n, commit)
	case *Conn:
		return true, lo.incomingAt(dec, now, key, n, commit)
	}
	return false, nil
}

// merge folds a committed Decision into Combine's.
func merge(out *Decision, d Decision) {
	out.Delay = max(out.Delay, d.Delay)
	out.ResetAfter = max(out.ResetAfter, d.ResetAfter)
	if out.Remaining < 0 || d.Remaining < out.Remaining {
		out.Remaining = d.Remaining
	}
}
