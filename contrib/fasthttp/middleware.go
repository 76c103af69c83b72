package shmfasthttp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/valyala/fasthttp"
)

// Options configures the middleware, as httplimit.Options does net/http's.
// The zero value keys requests by the peer's address (no proxies trusted),
// writes the headers of the limiter's policy, waits out delays, answers
// rejections with 429 and errors with 500.
type Options struct {
	// Next skips the middleware for a request when it returns true: no
	// decision, no headers.
	Next func(ctx *fasthttp.RequestCtx) bool
	// Key returns a request's limiter key. Nil keys by client address:
	// ClientAddr with TrustedProxies, made a key by httplimit.AddrKeyFunc
	// with IPv6Prefix. An error fails the request through Error.
	Key func(ctx *fasthttp.RequestCtx) (string, error)
	// IPv6Prefix is the prefix length by which the default Key folds an
	// IPv6 client: 64, 56 or 48. Zero means 64. A /48 makes a flood from
	// one /48 one key.
	IPv6Prefix int
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (httplimit.ParsePrefixes reads them from strings); used by the
	// default Key.
	TrustedProxies []netip.Prefix
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
	// first (a RequestCtx ends when the server shuts down). Nil uses a
	// timer.
	Wait func(ctx context.Context, d time.Duration) error
	// Rejected answers a rejected request, after the headers and
	// Retry-After are set. Nil answers 429 Too Many Requests.
	Rejected func(ctx *fasthttp.RequestCtx, d limiter.Decision)
	// Error answers a request whose key or decision failed, a decision that
	// timed out on a stuck shard lock (limiter.ErrLockTimeout) included.
	// Nil answers 500 Internal Server Error; to let such requests through
	// (fail open), call next from here, for outages only.
	Error func(ctx *fasthttp.RequestCtx, err error, next fasthttp.RequestHandler)
	// Tiers are more limiters a request may be limited by, each under
	// its name, which the headers give as the policy's.
	Tiers []admit.Tier
	// Choose returns the name of the tier that limits ctx's request: from
	// a header, a claim, the method or the route. "" is New's limiter. A
	// name that is no tier's fails the request through Error
	// (admit.ErrNoTier). Nil limits every request by New's limiter.
	Choose func(ctx *fasthttp.RequestCtx) string
	// Cost returns what ctx's request costs, charged to its limiter
	// (IncomingN): by the size of a batch or an upload, or a query's
	// weight. An error, or a cost below 1, fails the request through
	// Error. Nil charges 1.
	Cost func(ctx *fasthttp.RequestCtx) (int64, error)
}

// New returns middleware that asks l about every request, with commit: a
// rejected request gets o.Rejected, an allowed one waits out its delay
// (unless o.NoDelay) and goes on to the next handler; a Conn's request is
// left (Leaving, with its latency) when the next handler returns. Errors:
// ErrNilLimiter, ErrBadProxy for an invalid TrustedProxies prefix,
// ErrBadIPv6Prefix for an IPv6Prefix other than 0, 64, 56 or 48,
// ErrBadPolicy for a bad PolicyName, a negative Policy or a bad tier
// (admit.ErrBadTier).
func New(l limiter.Limiter, o Options) (func(fasthttp.RequestHandler) fasthttp.RequestHandler, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	for _, p := range o.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: %v", ErrBadProxy, p)
		}
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
		trusted := o.TrustedProxies
		m.o.Key = func(ctx *fasthttp.RequestCtx) (string, error) {
			a, err := ClientAddr(ctx, trusted)
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
	return func(next fasthttp.RequestHandler) fasthttp.RequestHandler {
		return func(ctx *fasthttp.RequestCtx) { m.serve(ctx, next) }
	}, nil
}

type middleware struct {
	g *admit.Gate
	o Options
}

func (m *middleware) serve(ctx *fasthttp.RequestCtx, next fasthttp.RequestHandler) {
	if m.o.Next != nil && m.o.Next(ctx) {
		next(ctx)
		return
	}
	key, err := m.o.Key(ctx)
	if err != nil {
		m.o.Error(ctx, err, next)
		return
	}
	g := m.g
	if m.o.Choose != nil {
		if g, err = g.Tier(m.o.Choose(ctx)); err != nil {
			m.o.Error(ctx, err, next)
			return
		}
	}
	n := int64(1)
	if m.o.Cost != nil {
		if n, err = m.o.Cost(ctx); err != nil {
			m.o.Error(ctx, err, next)
			return
		}
	}
	var a admit.Admission
	err = g.Decide(ctx, key, n, &a)
	for i := range a.Headers.Len() {
		f, v := a.Headers.At(i)
		ctx.Response.Header.SetCanonical(f.NameBytes(), v)
	}
	switch {
	case errors.Is(err, admit.ErrCancelled):
		answer(ctx, fasthttp.StatusServiceUnavailable, "request cancelled while delayed")
	case err != nil:
		m.o.Error(ctx, err, next)
	case !a.Decision.Allowed:
		m.o.Rejected(ctx, a.Decision)
	default:
		defer a.Pass.Done()
		next(ctx)
	}
}

// answer sets the status and a text body, keeping the headers already set
// (ctx.Error would reset them).
func answer(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/plain; charset=utf-8")
	ctx.SetBodyString(msg)
}

func tooManyRequests(ctx *fasthttp.RequestCtx, d limiter.Decision) {
	answer(ctx, fasthttp.StatusTooManyRequests, fasthttp.StatusMessage(fasthttp.StatusTooManyRequests))
}

func internalError(ctx *fasthttp.RequestCtx, err error, next fasthttp.RequestHandler) {
	answer(ctx, fasthttp.StatusInternalServerError, fasthttp.StatusMessage(fasthttp.StatusInternalServerError))
}
