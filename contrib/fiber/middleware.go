package shmfiber

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// Options configures the middleware, as httplimit.Options does net/http's.
// The zero value keys requests by ClientAddr. It writes the headers of the
// limiter's policy, and waits out delays. It answers rejections with 429
// and errors with 500.
type Options struct {
	// Options are the options every adapter shares: the headers' policy,
	// delays, tiers, dry runs, exemptions and refunds. Exempt is compared
	// with ClientAddr. Refund reads the response's status after c.Next(),
	// or the status of the error it returned: a *fiber.Error's code, or
	// 500 for any other error.
	admit.Options
	// Next lets a request through undecided when it returns true, as in
	// fiber's own middleware: no decision, no headers, no key. A health
	// check, for one.
	Next func(c fiber.Ctx) bool
	// Key returns a request's limiter key. Nil keys by ClientAddr, which
	// follows the app's TrustProxy, TrustProxyConfig and ProxyHeader but
	// takes the header's rightmost untrusted address, not c.IP()'s
	// leftmost (which the client writes). The address is made a key by
	// httplimit.AddrKeyFunc with IPv6Prefix. A peer with no IP address is
	// ErrNoClientAddr. An error fails the request through Error.
	Key func(c fiber.Ctx) (string, error)
	// IPv6Prefix is the prefix length by which the default Key folds an
	// IPv6 client: 64, 56 or 48. Zero means 64. A /48 makes a flood from
	// one /48 one key.
	IPv6Prefix int
	// Rejected answers a rejected request, after the headers and
	// Retry-After are set. Nil answers 429 Too Many Requests.
	Rejected func(c fiber.Ctx, d limiter.Decision) error
	// Error answers a request whose key or decision failed, a decision that
	// timed out on a stuck shard lock (limiter.ErrLockTimeout) included.
	// Nil answers 500 Internal Server Error; to let such requests through
	// (fail open), return c.Next() from here, for outages only.
	Error func(c fiber.Ctx, err error) error
	// Choose returns the name of the tier that limits c's request: from a
	// header, a claim, the method or the route. "" is New's limiter. A
	// name that is no tier's fails the request through Error
	// (admit.ErrNoTier). Nil limits every request by New's limiter.
	Choose func(c fiber.Ctx) string
	// Cost returns what c's request costs, charged to its limiter
	// (IncomingN): by the size of a batch or an upload, or a query's
	// weight. An error, or a cost below 1, fails the request through
	// Error. Nil charges 1.
	Cost func(c fiber.Ctx) (int64, error)
	// SkipSuccessfulRequests gives back the cost of a request answered
	// with a status below 400, as fiber's limiter does. It adds to Refund.
	SkipSuccessfulRequests bool
	// SkipFailedRequests gives back the cost of a request answered with a
	// status of 400 or above, as fiber's limiter does. It adds to Refund.
	SkipFailedRequests bool
}

// New returns fiber middleware that asks l about every request, with
// commit. A rejected request gets o.Rejected. An allowed one waits out its
// delay, unless o.NoDelay, and goes on with c.Next(). A Conn's request is
// left when the rest of the chain returns, with Leaving and its latency.
// One decision is one atomic dictionary operation. So every prefork child
// over the same zone admits from one budget.
//
// Errors:
//   - ErrNilLimiter;
//   - ErrBadIPv6Prefix for an IPv6Prefix other than 0, 64, 56 or 48;
//   - ErrBadPolicy for a bad PolicyName, a negative Policy or a bad tier
//     (admit.ErrBadTier);
//   - admit.ErrBadExempt for an invalid Exempt prefix.
func New(l limiter.Limiter, o Options) (fiber.Handler, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	addrKey, err := httplimit.AddrKeyFunc(o.IPv6Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadIPv6Prefix, err)
	}
	o.Refund = skipRefund(o)
	g, err := admit.New(l, o.Options)
	if errors.Is(err, admit.ErrBadExempt) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	m := &middleware{g: g, o: o, addrKey: addrKey}
	if m.o.Rejected == nil {
		m.o.Rejected = tooManyRequests
	}
	if m.o.Error == nil {
		m.o.Error = internalError
	}
	return m.serve, nil
}

type middleware struct {
	g       *admit.Gate
	o       Options
	addrKey func(netip.Addr) string
	rule    atomic.Pointer[proxyRule] // of the app last served
}

// clientAddr is ClientAddr, with the proxy rule of c's app read once.
func (m *middleware) clientAddr(c fiber.Ctx) (netip.Addr, error) {
	rule := m.rule.Load()
	if app := c.App(); rule == nil || rule.app != app {
		rule = ruleOf(app)
		m.rule.Store(rule)
	}
	return clientAddr(c, rule)
}

// key returns the limiter key of c's request, and exempt true for a
// request that Exempt lets through.
func (m *middleware) key(c fiber.Ctx) (key string, exempt bool, err error) {
	if m.o.Key == nil {
		a, err := m.clientAddr(c)
		if err != nil {
			return "", false, err
		}
		if m.g.Exempts() && m.g.Exempt(a) {
			return "", true, nil
		}
		return m.addrKey(a), false, nil
	}
	if m.g.Exempts() {
		if a, err := m.clientAddr(c); err == nil && m.g.Exempt(a) {
			return "", true, nil
		}
	}
	key, err = m.o.Key(c)
	return key, false, err
}

func (m *middleware) serve(c fiber.Ctx) error {
	if m.o.Next != nil && m.o.Next(c) {
		return c.Next()
	}
	key, exempt, err := m.key(c)
	if err != nil {
		return m.o.Error(c, err)
	}
	if exempt {
		return c.Next()
	}
	g := m.g
	if m.o.Choose != nil {
		if g, err = g.Tier(m.o.Choose(c)); err != nil {
			return m.o.Error(c, err)
		}
	}
	n := int64(1)
	if m.o.Cost != nil {
		if n, err = m.o.Cost(c); err != nil {
			return m.o.Error(c, err)
		}
	}
	var a admit.Admission
	err = g.Decide(c.Context(), key, n, &a)
	h := &c.Response().Header
	for i := range a.Headers.Len() {
		f, v := a.Headers.At(i)
		h.SetCanonical(f.NameBytes(), v)
	}
	switch {
	case errors.Is(err, admit.ErrCancelled):
		return c.Status(fiber.StatusServiceUnavailable).SendString("request cancelled while delayed")
	case err != nil:
		return m.o.Error(c, err)
	case !a.Decision.Allowed:
		return m.o.Rejected(c, a.Decision)
	case a.Pass.Refunds():
		return serveRefund(c, a.Pass)
	}
	defer a.Pass.Done()
	return c.Next()
}

// serveRefund runs the rest of the chain and ends p with the status of
// its answer. A handler that panics ends p with 500.
func serveRefund(c fiber.Ctx, p admit.Pass) (err error) {
	status := fiber.StatusInternalServerError
	defer func() { p.Finish(status) }()
	err = c.Next()
	status = statusOf(c, err)
	return err
}

// statusOf is the status of c's answer, when the chain returned err: the
// response's status for nil, a *fiber.Error's code, or 500.
func statusOf(c fiber.Ctx, err error) int {
	if err == nil {
		return c.Response().StatusCode()
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return fiber.StatusInternalServerError
}

// skipRefund is o's Refund with SkipSuccessfulRequests and
// SkipFailedRequests added.
func skipRefund(o Options) func(status int) bool {
	if !o.SkipSuccessfulRequests && !o.SkipFailedRequests {
		return o.Refund
	}
	refund, ok, failed := o.Refund, o.SkipSuccessfulRequests, o.SkipFailedRequests
	return func(status int) bool {
		return (ok && status < 400) || (failed && status >= 400) || (refund != nil && refund(status))
	}
}

func tooManyRequests(c fiber.Ctx, d limiter.Decision) error {
	return c.SendStatus(fiber.StatusTooManyRequests)
}

func internalError(c fiber.Ctx, err error) error {
	return c.SendStatus(fiber.StatusInternalServerError)
}
