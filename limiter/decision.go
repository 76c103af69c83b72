package limiter

import (
	"context"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Decision is a limiter's answer to one request.
//
// The zero Decision rejects. Fields a limiter cannot know are zero: a Conn
// has no RetryAfter, and a Count reports ResetAfter only when it rejects
// (Count.ResetAfter reads it on demand).
type Decision struct {
	// Allowed reports whether the request may go on. A rejection is a
	// Decision with Allowed false, never an error.
	Allowed bool
	// Delay is how long the request should wait before it goes on (Req and
	// Conn; 0 for the others). nginx's nodelay ignores it.
	Delay time.Duration
	// State is what lua-resty-limit-traffic returns second: the excess in
	// requests for Req, the remaining allowance for Count and
	// SlidingWindow (negative once a Count is over its limit), the current
	// connections for Conn, and Remaining for GCRA.
	State float64
	// Remaining is how many more requests would be allowed right now,
	// never negative.
	Remaining int64
	// RetryAfter is, on a rejection, how long until the same request
	// would be allowed; 0 when allowed or not known (Conn).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full allowance
	// with no further requests.
	ResetAfter time.Duration
	// Committed reports whether the limiter counted this request, so that
	// Uncommit or Conn.Leaving must undo it (lua-resty-limit-traffic's
	// conn:is_committed). It is false for dry runs and rejections.
	Committed bool
}

// Limiter is what every limiter of this package does, and what Combine and
// package httplimit take. The limiters of this package never sleep and never
// read ctx, which is there for limiters over a network: a Delay is returned
// for the caller to wait out (httplimit does). A decision does wait for its
// key's shard lock, as every dictionary operation does: briefly, longer
// while another process holds it, and a few milliseconds and a repair of the
// shard when that process died holding it. A leased Conn also takes a mutex
// of its own, in this process.
type Limiter interface {
	// Incoming is IncomingN of one request.
	Incoming(ctx context.Context, key string, commit bool) (Decision, error)
	// IncomingN decides on a request of cost n for key and, when commit is
	// true and the request is allowed, counts it as n requests. A
	// rejection is Allowed false, not an error. A cost above the most the
	// limiter admits at once is always rejected. Errors: ErrBadCost for n
	// below 1, the dictionary's, ErrAbused, and the like.
	IncomingN(ctx context.Context, key string, n int64, commit bool) (Decision, error)
	// Uncommit is UncommitN of one request.
	Uncommit(ctx context.Context, key string) error
	// UncommitN undoes a committed IncomingN of cost n for key, as when a
	// request that was counted is given up (Combine uses it).
	UncommitN(ctx context.Context, key string, n int64) error
	// Reset forgets key's state: the next request finds the key as if it
	// had never been seen. Resetting an absent key is no error.
	Reset(ctx context.Context, key string) error
}

// Policy is a limiter's quota as clients see it: Limit requests per
// Window, or, with Window 0, Limit requests at once (a Conn). Package
// httplimit writes it in the RateLimit-Policy header.
type Policy struct {
	Limit  int64
	Window time.Duration
}

// local is a limiter of this package: Combine gives it its one now.
type local interface {
	Limiter
	dictionary() *dict.Dict
	// incomingAt decides on a request of cost n, at least 1, at now into
	// *dec, which is zero, and leaves it zero on an error. The Decision is filled in place, field by field,
	// not returned: a Decision is too large for the compiler to keep in
	// registers, and each function that returned one copied it, a copy
	// the CPU cannot forward from the stores that built it (DESIGN.md).
	incomingAt(dec *Decision, now int64, key string, n int64, commit bool) error
}

// seconds converts seconds in a float to a Duration, saturating.
func seconds(s float64) time.Duration {
	ns := s * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// floorCount converts a count in a float to an int64, never negative.
func floorCount(f float64) int64 {
	switch {
	case !(f > 0):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}
