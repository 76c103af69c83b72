package redistier

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter"
)

// DefaultTimeout is the per-call timeout when Options.Timeout is 0 or
// less.
const DefaultTimeout = 100 * time.Millisecond

// Failure is what a limiter decides when Redis does not answer in time or
// the connection fails.
type Failure int

const (
	// FailError returns the error, wrapped in ErrUnavailable, with a
	// rejecting zero Decision. The caller decides. It is the zero value.
	FailError Failure = iota
	// FailOpen allows the request and returns no error. It counts nothing.
	// The Decision has Allowed true, and its other fields are zero.
	FailOpen
	// FailClosed rejects the request with RetryAfter set to the timeout,
	// and returns no error.
	FailClosed
	// FailLocal asks Options.Local and returns its answer. Local is
	// usually a limiter of package limiter over the host's zone, with this
	// host's share of the limit.
	FailLocal
)

// Clock chooses whose time a limiter's script uses.
type Clock int

const (
	// DefaultClock is the caller's clock for Req, as
	// lua-resty-redis-ratelimit passes ngx.now(). It is the server's clock
	// for SlidingWindow and GCRA.
	DefaultClock Clock = iota
	// CallerClock passes Options.Now to the script.
	CallerClock
	// ServerClock reads Redis's TIME inside the script, so that callers
	// whose clocks disagree share one time line.
	ServerClock
)

// Options are what every Redis limiter of this package takes. The zero
// value means DefaultTimeout, FailError and each limiter's default clock.
type Options struct {
	// Timeout bounds each call to Redis, and so each decision. 0 or less
	// means DefaultTimeout.
	Timeout time.Duration
	// OnFailure is the failure policy.
	OnFailure Failure
	// Local is the limiter that FailLocal asks, with the same key.
	Local limiter.Limiter
	// Clock chooses the caller's or the server's time.
	Clock Clock
	// Now is the caller's clock. nil means time.Now. Tests inject it.
	Now func() time.Time
	// LiveEvery is how often a limiter reads its live numbers when its
	// script cannot read them: with a client other than *redis.Client,
	// such as a cluster client, and a prefix without hash tag. 0 or less
	// means DefaultLiveEvery. It is measured on Now.
	LiveEvery time.Duration
}

// Stats counts a limiter's calls to Redis, the calls that failed, and the
// decisions that the failure policy made instead. FailError makes no such
// decision.
type Stats struct {
	Calls, Errors, Fallbacks uint64
	// Unlisted counts the keys that could not be listed for the flushes
	// of a window, because the zone's shard was full. The host decides on
	// its own count of such a key. The key stays out of the global count
	// for the rest of the window. Only Tiered counts it.
	Unlisted uint64
	// Relisted counts the keys that this instance's flushes listed again,
	// after the zone evicted their window's list. Each was out of the
	// global count from the eviction to the flush that found it. Only
	// Tiered counts it.
	Relisted uint64
}

// base is what the Redis limiters share: the client, the options and the
// counters.
type base struct {
	c       redis.UniversalClient
	prefix  string
	o       Options
	server  bool // the script reads TIME
	calls   atomic.Uint64
	errs    atomic.Uint64
	fallbck atomic.Uint64
	live    live
	most    atomic.Int64 // the largest cost admitted, as of the last decision
}

func (b *base) init(c redis.UniversalClient, prefix string, o Options, serverDefault bool) error {
	if c == nil {
		return ErrNilClient
	}
	switch cc := c.(type) {
	case *redis.Client:
		if !cc.Options().ContextTimeoutEnabled {
			return ErrNoContextTimeout
		}
	case *redis.ClusterClient:
		if !cc.Options().ContextTimeoutEnabled {
			return ErrNoContextTimeout
		}
	}
	if o.OnFailure == FailLocal && o.Local == nil {
		return ErrNoLocal
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	b.c, b.prefix, b.o = c, prefix, o
	b.server = o.Clock == ServerClock || (o.Clock == DefaultClock && serverDefault)
	return nil
}

// Stats returns the limiter's counters.
func (b *base) Stats() Stats {
	return Stats{Calls: b.calls.Load(), Errors: b.errs.Load(), Fallbacks: b.fallbck.Load()}
}

// key returns the Redis key of a limiter key: "prefix:key", as
// lua-resty-redis-ratelimit writes "zone:key".
func (b *base) key(key string) string { return b.prefix + ":" + key }

// now returns the script's now argument in units per second (1000 for ms,
// 1e6 for µs): "" under the server clock, which the scripts read as TIME.
func (b *base) now(perSec int64) string {
	if b.server {
		return ""
	}
	return strconv.FormatInt(b.o.Now().UnixNano()/(int64(time.Second)/perSec), 10)
}

// run runs script on key within the timeout (EVALSHA, EVAL on NOSCRIPT) and
// returns its integer reply.
func (b *base) run(ctx context.Context, s *redis.Script, key string, args ...any) ([]int64, error) {
	if key == "" {
		return nil, ErrBadKey
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	keys, args, err := b.scriptKeys(ctx, key, args)
	if err != nil {
		return nil, err
	}
	b.calls.Add(1)
	cmd := s.Run(ctx, b.c, keys, args...)
	r, err := cmd.Int64Slice()
	if err == nil {
		return r, nil
	}
	b.errs.Add(1)
	return nil, callErr(key, cmd.Err(), err)
}

// runN is run for a script whose reply is n integers.
func (b *base) runN(ctx context.Context, n int, s *redis.Script, key string, args ...any) ([]int64, error) {
	r, err := b.run(ctx, s, key, args...)
	if err == nil {
		if err = replyOf(key, r, n); err != nil {
			b.errs.Add(1)
		}
	}
	return r, err
}

// isScriptErr reports whether err is an error reply that says the script
// ran and failed, not that the server or cluster is unavailable.
func isScriptErr(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY "} {
		if strings.HasPrefix(re.Error(), p) {
			return false
		}
	}
	return true
}

// fail applies the failure policy to a decision on a request of cost n
// whose call failed with err.
func (b *base) fail(ctx context.Context, key string, n int64, commit bool, err error) (limiter.Decision, error) {
	if !errors.Is(err, ErrUnavailable) {
		return limiter.Decision{}, err
	}
	switch b.o.OnFailure {
	case FailOpen:
		b.fallbck.Add(1)
		return limiter.Decision{Allowed: true}, nil
	case FailClosed:
		b.fallbck.Add(1)
		return limiter.Decision{RetryAfter: b.o.Timeout}, nil
	case FailLocal:
		b.fallbck.Add(1)
		return b.o.Local.IncomingN(ctx, key, n, commit)
	}
	return limiter.Decision{}, err
}

// failUncommit applies the policy to an UncommitN of cost n whose call
// failed: under FailLocal the local limiter gives the request back, since
// it counted it; otherwise the error is returned.
func (b *base) failUncommit(ctx context.Context, key string, n int64, err error) error {
	if errors.Is(err, ErrUnavailable) && b.o.OnFailure == FailLocal {
		b.fallbck.Add(1)
		return b.o.Local.UncommitN(ctx, key, n)
	}
	return err
}

// resetKeys deletes the Redis keys rks of key within the timeout. Under
// FailLocal it resets key in Options.Local too, whatever Redis answered:
// the local limiter holds what it counted while Redis was failed. Errors:
// ErrBadKey, ErrUnavailable when Redis did not answer, whatever the policy,
// ErrScript for an error reply, Options.Local's.
func (b *base) resetKeys(ctx context.Context, key string, rks ...string) error {
	if key == "" {
		return ErrBadKey
	}
	tctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	b.calls.Add(1)
	var err error
	if cerr := b.c.Del(tctx, rks...).Err(); cerr != nil {
		b.errs.Add(1)
		err = callErr(key, cerr, cerr)
	}
	if b.o.OnFailure == FailLocal {
		err = errors.Join(err, b.o.Local.Reset(ctx, key))
	}
	return err
}

// checkCost returns limiter.ErrBadCost for a cost below 1.
func checkCost(n int64) error {
	if n < 1 {
		return fmt.Errorf("%w: %d", limiter.ErrBadCost, n)
	}
	return nil
}

// checkUncommit returns limiter.ErrBadCost for a cost below 1 or above
// most, the largest cost the limiter admits at once.
func checkUncommit(n, most int64) error {
	if n < 1 || n > most {
		return fmt.Errorf("%w: %d, not 1 to %d", limiter.ErrBadCost, n, most)
	}
	return nil
}

// tooCostly is the rejection of a cost the limiter never admits, made
// without calling Redis: RetryAfter is the longest Duration, the other
// fields zero.
func tooCostly() limiter.Decision { return limiter.Decision{RetryAfter: math.MaxInt64} }

// luaNow returns the Lua that starts a script by setting now from ARGV[argv],
// in units per second (1000 for ms, 1e6 for µs), or from the server's TIME
// when the argument is empty (base.now under ServerClock).
func luaNow(argv int, perSec int64) string {
	return fmt.Sprintf(`local now = tonumber(ARGV[%d])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * %d + math.floor(tonumber(t[2]) / %d)
end
`, argv, perSec, 1000000/perSec)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ms returns n ms as a Duration, 0 for n ≤ 0, saturating.
func ms(n int64) time.Duration { return span(n, time.Millisecond) }
