package shmfasthttp

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/headers"
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
	// httplimit.AddrKey of ClientAddr with TrustedProxies. An error fails
	// the request through Error.
	Key func(ctx *fasthttp.RequestCtx) (string, error)
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
}

type leaver interface {
	Leaving(ctx context.Context, key string, latency time.Duration) (int64, error)
}

type resetter interface {
	ResetAfter(ctx context.Context, key string) (time.Duration, error)
}

type policer interface {
	Policy() limiter.Policy
}

// New returns middleware that asks l about every request, with commit: a
// rejected request gets o.Rejected, an allowed one waits out its delay
// (unless o.NoDelay) and goes on to the next handler; a Conn's request is
// left (Leaving, with its latency) when the next handler returns. Errors:
// ErrNilLimiter, ErrBadProxy for an invalid TrustedProxies prefix,
// ErrBadPolicy for a bad PolicyName or a negative Policy.
func New(l limiter.Limiter, o Options) (func(fasthttp.RequestHandler) fasthttp.RequestHandler, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	for _, p := range o.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: %v", ErrBadProxy, p)
		}
	}
	if o.Policy.Limit < 0 || o.Policy.Window < 0 {
		return nil, fmt.Errorf("%w: %+v", ErrBadPolicy, o.Policy)
	}
	m := &middleware{l: l, o: o}
	var fixed *limiter.Policy
	if o.Policy.Limit > 0 {
		fixed = &o.Policy
	} else if p, ok := l.(policer); ok {
		m.policer = p
		pol := p.Policy()
		fixed = &pol
	}
	w, err := headers.New(o.PolicyName, fixed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	m.w.Store(&policyWriter{w: w, p: fixed})
	m.leaver, _ = l.(leaver)
	m.resetter, _ = l.(resetter)
	if m.o.Key == nil {
		trusted := o.TrustedProxies
		m.o.Key = func(ctx *fasthttp.RequestCtx) (string, error) {
			a, err := ClientAddr(ctx, trusted)
			if err != nil {
				return "", err
			}
			return httplimit.AddrKey(a), nil
		}
	}
	if m.o.Wait == nil {
		m.o.Wait = sleep
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

// policyWriter is the headers' Writer of one policy.
type policyWriter struct {
	w *headers.Writer
	p *limiter.Policy
}

type middleware struct {
	l        limiter.Limiter
	o        Options
	w        atomic.Pointer[policyWriter] // the current policy's
	policer  policer                      // the limiter's, when Options has none
	leaver   leaver
	resetter resetter
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
	d, err := m.l.Incoming(ctx, key, true)
	if err != nil {
		m.o.Error(ctx, err, next)
		return
	}
	if !m.o.NoHeaders {
		m.headers(ctx, key, d)
	}
	if !d.Allowed {
		ctx.Response.Header.Set(headers.RetryAfter, headers.RetryAfterValue(d))
		m.o.Rejected(ctx, d)
		return
	}
	if m.leaver != nil && d.Committed {
		start := time.Now()
		defer func() { m.leaver.Leaving(context.WithoutCancel(ctx), key, time.Since(start)) }()
	}
	if d.Delay > 0 && !m.o.NoDelay {
		if err := m.o.Wait(ctx, d.Delay); err != nil {
			if m.leaver == nil && d.Committed {
				m.l.Uncommit(context.WithoutCancel(ctx), key)
			}
			answer(ctx, fasthttp.StatusServiceUnavailable, "request cancelled while delayed")
			return
		}
	}
	next(ctx)
}

// headers writes the rate limit headers of d.
func (m *middleware) headers(ctx *fasthttp.RequestCtx, key string, d limiter.Decision) {
	pw := m.w.Load()
	if m.policer != nil {
		if p := m.policer.Policy(); pw.p == nil || p != *pw.p {
			// The limiter's policy changed (a Conn's SetMax): a new
			// Writer, whose name was checked by New.
			w, err := headers.New(m.o.PolicyName, &p)
			if err == nil {
				pw = &policyWriter{w: w, p: &p}
				m.w.Store(pw)
			}
		}
	}
	reset := d.ResetAfter
	if reset == 0 && d.Allowed && m.resetter != nil {
		reset, _ = m.resetter.ResetAfter(ctx, key) // the headers go without it on error
	}
	pw.w.Write(d, reset, ctx.Response.Header.Set)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
