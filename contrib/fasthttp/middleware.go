package shmfasthttp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/valyala/fasthttp"
)

// Options configures the middleware, as httplimit.Options does net/http's.
// The zero value keys requests by the peer's address, with no proxies
// trusted. It writes the headers of the limiter's policy, and waits out
// delays. It answers rejections with 429 and errors with 500.
type Options struct {
	// Options are the options every adapter shares: the headers' policy,
	// delays, tiers, dry runs, exemptions and refunds. Exempt is compared
	// with ClientAddr under TrustedProxies. Refund reads the response's
	// status after the next handler. A RequestCtx ends when the server
	// shuts down, which ends a Wait.
	admit.Options
	// Next lets a request through undecided when it returns true: no
	// decision, no headers, no key. A health check, for one.
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
	// default Key and by Exempt.
	TrustedProxies []netip.Prefix
	// Rejected answers a rejected request, after the headers and
	// Retry-After are set. Nil answers 429 Too Many Requests.
	Rejected func(ctx *fasthttp.RequestCtx, d limiter.Decision)
	// Error answers a request whose key or decision failed, a decision that
	// timed out on a stuck shard lock (limiter.ErrLockTimeout) included.
	// Nil answers 500 Internal Server Error; to let such requests through
	// (fail open), call next from here, for outages only.
	Error func(ctx *fasthttp.RequestCtx, err error, next fasthttp.RequestHandler)
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

// New returns middleware that asks l about every request, with commit. A
// rejected request gets o.Rejected. An allowed one waits out its delay,
// unless o.NoDelay, and goes on to the next handler. A Conn's request is
// left when the next handler returns, with Leaving and its latency.
//
// Errors:
//   - ErrNilLimiter;
//   - ErrBadProxy for an invalid TrustedProxies prefix;
//   - ErrBadIPv6Prefix for an IPv6Prefix other than 0, 64, 56 or 48;
//   - ErrBadPolicy for a bad PolicyName, a negative Policy or a bad tier
//     (admit.ErrBadTier);
//   - admit.ErrBadExempt for an invalid Exempt prefix.
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
	return func(next fasthttp.RequestHandler) fasthttp.RequestHandler {
		return func(ctx *fasthttp.RequestCtx) { m.serve(ctx, next) }
	}, nil
}

type middleware struct {
	g       *admit.Gate
	o       Options
	addrKey func(netip.Addr) string
}

// key returns the limiter key of ctx's request, and exempt true for a
// request that Exempt lets through.
func (m *middleware) key(ctx *fasthttp.RequestCtx) (key string, exempt bool, err error) {
	if m.o.Key == nil {
		a, err := ClientAddr(ctx, m.o.TrustedProxies)
		if err != nil {
			return "", false, err
		}
		if m.g.Exempts() && m.g.Exempt(a) {
			return "", true, nil
		}
		return m.addrKey(a), false, nil
	}
	if m.g.Exempts() {
		if a, err := ClientAddr(ctx, m.o.TrustedProxies); err == nil && m.g.Exempt(a) {
			return "", true, nil
		}
	}
	key, err = m.o.Key(ctx)
	return key, false, err
}

func (m *middleware) serve(ctx *fasthttp.RequestCtx, next fasthttp.RequestHandler) {
	if m.o.Next != nil && m.o.Next(ctx) {
		next(ctx)
		return
	}
	key, exempt, err := m.key(ctx)
	if err != nil {
		m.o.Error(ctx, err, next)
		return
	}
	if exempt {
		next(ctx)
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
	case a.Pass.Refunds():
		serveRefund(ctx, next, a.Pass)
	default:
		defer a.Pass.Done()
		next(ctx)
	}
}

// serveRefund runs next and ends p with the response's status. A handler
// that panics ends p with 500.
func serveRefund(ctx *fasthttp.RequestCtx, next fasthttp.RequestHandler, p admit.Pass) {
	status := fasthttp.StatusInternalServerError
	defer func() { p.Finish(status) }()
	next(ctx)
	status = ctx.Response.StatusCode()
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
