package httplimit

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/headers"
)

// Options configures the middleware. The zero value keys requests by client
// address (no proxies trusted), writes the headers of the limiter's policy,
// waits out delays, answers rejections with 429 and errors with 500.
type Options struct {
	// Key returns a request's limiter key. Nil keys by client address:
	// AddrKey of ClientAddr with TrustedProxies. An error fails the request
	// through Error.
	Key func(r *http.Request) (string, error)
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (ParsePrefixes reads them from strings); used by the default Key.
	TrustedProxies []netip.Prefix
	// Policy is the quota the headers announce. Its zero value takes the
	// limiter's own (a Policy() limiter.Policy method, as this module's
	// limiters have); with neither, RateLimit-Policy and X-RateLimit-Limit
	// are left out.
	Policy limiter.Policy
	// PolicyName names the policy in RateLimit-Policy and RateLimit; empty
	// means "default".
	PolicyName string
	// NoHeaders leaves out every rate limit header but Retry-After.
	NoHeaders bool
	// NoDelay lets a delayed request through at once, as nginx's nodelay:
	// the delay still counts against the limit, but nobody waits.
	NoDelay bool
	// Wait waits out a decision's delay and returns ctx's error if ctx ends
	// first. Nil uses a timer. Tests inject a fake.
	Wait func(ctx context.Context, d time.Duration) error
	// Rejected answers a rejected request, after the headers and
	// Retry-After are set. Nil writes 429 Too Many Requests with a short
	// text body.
	Rejected func(w http.ResponseWriter, r *http.Request, d limiter.Decision)
	// Error answers a request whose key or decision failed, a decision that
	// timed out on a stuck shard lock (limiter.ErrLockTimeout) included. Nil
	// writes 500 Internal Server Error; to let such requests through (fail
	// open), call the next handler from here, for outages only: a key whose
	// state no limiter writes (limiter.ErrBadState) is no outage.
	Error func(w http.ResponseWriter, r *http.Request, err error)
}

// leaver is a limiter whose counted requests must be ended (limiter.Conn).
type leaver interface {
	Leaving(ctx context.Context, key string, latency time.Duration) (int64, error)
}

// resetter is a limiter that reads a key's reset on demand
// (limiter.Count, which leaves Decision.ResetAfter 0 when it allows).
type resetter interface {
	ResetAfter(ctx context.Context, key string) (time.Duration, error)
}

// policer is a limiter that states its policy.
type policer interface {
	Policy() limiter.Policy
}

// New returns middleware that asks l about every request, with commit:
// a rejected request gets o.Rejected, an allowed one waits out its delay
// (unless o.NoDelay) and goes on to the next handler; a Conn's request is
// left (Leaving, with its latency) when the next handler returns. Errors:
// ErrNilLimiter, ErrBadProxy for an invalid TrustedProxies prefix,
// ErrBadPolicy for a bad PolicyName or a negative Policy.
func New(l limiter.Limiter, o Options) (func(http.Handler) http.Handler, error) {
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
	var fixed *limiter.Policy
	m := &middleware{l: l, o: o}
	if o.Policy.Limit > 0 {
		fixed = &o.Policy
	} else if p, ok := l.(policer); ok {
		m.policer = p
	}
	hw, err := headers.New(o.PolicyName, fixed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	m.writer.Store(&policyWriter{w: hw})
	m.leaver, _ = l.(leaver)
	m.resetter, _ = l.(resetter)
	if m.o.Key == nil {
		trusted := o.TrustedProxies
		m.o.Key = func(r *http.Request) (string, error) {
			a, err := ClientAddr(r, trusted)
			if err != nil {
				return "", err
			}
			return AddrKey(a), nil
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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}, nil
}

type middleware struct {
	l        limiter.Limiter
	o        Options
	writer   atomic.Pointer[policyWriter] // of the last policy seen
	policer  policer                      // the limiter's, when Options has none
	leaver   leaver
	resetter resetter
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ctx := r.Context()
	key, err := m.o.Key(r)
	if err != nil {
		m.o.Error(w, r, err)
		return
	}
	d, err := m.l.Incoming(ctx, key, true)
	if err != nil {
		m.o.Error(w, r, err)
		return
	}
	if !m.o.NoHeaders {
		m.headers(ctx, w.Header(), key, d)
	}
	if !d.Allowed {
		w.Header().Set(headers.RetryAfter, headers.RetryAfterValue(d))
		m.o.Rejected(w, r, d)
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
			http.Error(w, "request cancelled while delayed", http.StatusServiceUnavailable)
			return
		}
	}
	next.ServeHTTP(w, r)
}

// headers writes the rate limit headers of d.
func (m *middleware) headers(ctx context.Context, h http.Header, key string, d limiter.Decision) {
	pw := m.writer.Load()
	if m.policer != nil {
		if p := m.policer.Policy(); !pw.known || p != pw.p {
			w, _ := headers.New(m.o.PolicyName, &p) // the name passed New
			pw = &policyWriter{p: p, known: true, w: w}
			m.writer.Store(pw)
		}
	}
	reset := d.ResetAfter
	if reset == 0 && d.Allowed && m.resetter != nil {
		reset, _ = m.resetter.ResetAfter(ctx, key) // the headers go without it on error
	}
	pw.w.Write(d, reset, h.Set)
}

// policyWriter is the headers.Writer of a policy: the limiter's policy p
// when known, else the one fixed by Options, or none.
type policyWriter struct {
	p     limiter.Policy
	known bool // p is the limiter's
	w     *headers.Writer
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

func tooManyRequests(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
	http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
}

func internalError(w http.ResponseWriter, r *http.Request, err error) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}
