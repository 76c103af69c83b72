package shmfiber

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// Options configures the middleware, as httplimit.Options does net/http's.
// The zero value keys requests by ClientAddr, writes the headers of the
// limiter's policy, waits out delays, answers rejections with 429 and
// errors with 500.
type Options struct {
	// Next skips the middleware for a request when it returns true (fiber's
	// convention): no decision, no headers.
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
	// Policy is the quota the headers announce. Its zero value takes the
	// limiter's own (a Policy() limiter.Policy method, as the limiters of
	// package limiter have); with neither, RateLimit-Policy and
	// X-RateLimit-Limit are left out.
	Policy limiter.Policy
	// PolicyName names the policy in RateLimit-Policy and RateLimit; empty
	// means "default".
	PolicyName string
	// NoHeaders leaves out every rate limit header but Retry-After.
	NoHeaders bool
	// NoDelay lets a delayed request through at once, as nginx's nodelay.
	NoDelay bool
	// Wait waits out a decision's delay and returns ctx's error if ctx ends
	// first. Nil uses a timer.
	Wait func(ctx context.Context, d time.Duration) error
	// Rejected answers a rejected request, after the headers and
	// Retry-After are set. Nil answers 429 Too Many Requests.
	Rejected func(c fiber.Ctx, d limiter.Decision) error
	// Error answers a request whose key or decision failed, a decision that
	// timed out on a stuck shard lock (limiter.ErrLockTimeout) included.
	// Nil answers 500 Internal Server Error; to let such requests through
	// (fail open), return c.Next() from here, for outages only.
	Error func(c fiber.Ctx, err error) error
	// Tiers are more limiters a request may be limited by, each under
	// its name, which the headers give as the policy's.
	Tiers []admit.Tier
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
}

// New returns fiber middleware that asks l about every request, with
// commit: a rejected request gets o.Rejected, an allowed one waits out its
// delay (unless o.NoDelay) and goes on with c.Next(); a Conn's request is
// left (Leaving, with its latency) when the rest of the chain returns. One
// decision is one atomic dictionary operation, so every prefork child over
// the same zone admits from one budget. Errors: ErrNilLimiter,
// ErrBadIPv6Prefix for an IPv6Prefix other than 0, 64, 56 or 48,
// ErrBadPolicy for a bad PolicyName, a negative Policy or a bad tier
// (admit.ErrBadTier).
func New(l limiter.Limiter, o Options) (fiber.Handler, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	addrKey, err := httplimit.AddrKeyFunc(o.IPv6Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadIPv6Prefix, err)
	}
	g, err := admit.New(l, admit.Options{Policy: o.Policy, PolicyName: o.PolicyName, NoHeaders: o.NoHeaders, NoDelay: o.NoDelay, Wait: o.Wait, Tiers: o.Tiers})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	m := &middleware{g: g, o: o}
	if m.o.Key == nil {
		m.o.Key = func(c fiber.Ctx) (string, error) {
			a, err := ClientAddr(c)
			if err != nil {
				return "", err
			}
			return addrKey(a), nil
		}
	}
	if m.o.Rejected == nil {
		m.o.Rejected = tooManyRequests
	}
	if m.o.Error == nil {
		m.o.Error = internalError
	}
	return m.serve, nil
}

type middleware struct {
	g *admit.Gate
	o Options
}

func (m *middleware) serve(c fiber.Ctx) error {
	if m.o.Next != nil && m.o.Next(c) {
		return c.Next()
	}
	key, err := m.o.Key(c)
	if err != nil {
		return m.o.Error(c, err)
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
	}
	defer a.Pass.Done()
	return c.Next()
}

func tooManyRequests(c fiber.Ctx, d limiter.Decision) error {
	return c.SendStatus(fiber.StatusTooManyRequests)
}

func internalError(c fiber.Ctx, err error) error {
	return c.SendStatus(fiber.StatusInternalServerError)
}
