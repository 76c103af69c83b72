package limiter

import (
	"context"
	"math"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Decision is a limiter's answer to one request.
//
// The zero Decision rejects. A field that a limiter cannot know is zero. A
// Conn has no RetryAfter. A Count's dry run reports ResetAfter only when
// it rejects. Count.ResetAfter reads it on demand.
type Decision struct {
	// Allowed reports whether the request may go on. A rejection is a
	// Decision with Allowed false, never an error.
	Allowed bool
	// Delay is how long the request should wait before it goes on. Only Req
	// and Conn set it. nginx's nodelay ignores it.
	Delay time.Duration
	// State is what lua-resty-limit-traffic returns second. For Req it is
	// the excess in requests. For Count and SlidingWindow it is the
	// allowance left, which is negative once the key is over its limit. For
	// Conn it is the connections in flight, and for GCRA it is Remaining.
	State float64
	// Remaining is how many more requests would be allowed right now, never
	// negative.
	Remaining int64
	// RetryAfter is, on a rejection, how long until the same request would
	// be allowed. It is 0 when the request is allowed, or when the limiter
	// cannot know it, as with a Conn.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full allowance,
	// with no further requests.
	ResetAfter time.Duration
	// Committed reports whether the limiter counted this request. A counted
	// request is what Uncommit undoes and what Conn.Leaving must end. It is
	// lua-resty-limit-traffic's conn:is_committed. It is false for dry runs
	// and rejections.
	Committed bool
}

// Limiter is what every limiter of this package does. Combine and package
// httplimit take a Limiter.
//
// The limiters of this package never sleep. They return a Delay for the
// caller to wait out, as httplimit does. They never read ctx, which is
// there for limiters over a network.
//
// A decision does wait for its key's shard lock, as every dictionary
// operation does. The wait is brief, and longer while another process holds
// the lock. If that process died holding it, the wait lasts a few
// milliseconds and repairs the shard. A leased Conn also takes a mutex of
// its own, in this process.
type Limiter interface {
	// Incoming is IncomingN of one request.
	Incoming(ctx context.Context, key string, commit bool) (Decision, error)
	// IncomingN decides on a request of cost n for key. If commit is true
	// and the request is allowed, it counts it as n requests. A rejection
	// is Allowed false, not an error. A cost above the most the limiter
	// admits at once is always rejected.
	//
	// IncomingN returns ErrBadCost if n is below 1. It may return other
	// errors, such as ErrAbused and the dictionary's.
	IncomingN(ctx context.Context, key string, n int64, commit bool) (Decision, error)
	// Uncommit is UncommitN of one request.
	Uncommit(ctx context.Context, key string) error
	// UncommitN undoes a committed IncomingN of cost n for key. A caller
	// uses it to give up a request that was counted, as Combine does.
	UncommitN(ctx context.Context, key string, n int64) error
	// Reset forgets key's state. The next request finds the key as if it
	// had never been seen. Resetting an absent key is no error.
	Reset(ctx context.Context, key string) error
}

// Policy is a limiter's quota as clients see it. Package httplimit writes
// it in the RateLimit-Policy header.
type Policy struct {
	// Limit is how many requests a client may make per Window.
	Limit int64
	// Window is the period of Limit. It is 0 for a Conn, whose Limit counts
	// requests at once.
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
