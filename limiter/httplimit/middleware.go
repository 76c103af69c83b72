package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/headers"
)

// Options configures the middleware. The zero value keys requests by client
// address (no proxies trusted), writes the headers of the limiter's policy,
// waits out delays, answers rejections with 429 and errors with 500.
type Options struct {
	// Key returns a request's limiter key. Nil keys by client address:
	// ClientAddr with TrustedProxies, made a key by AddrKeyFunc with
	// IPv6Prefix. An error fails the request through Error.
	Key func(r *http.Request) (string, error)
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (ParsePrefixes reads them from strings); used by the default Key.
	TrustedProxies []netip.Prefix
	// IPv6Prefix is the prefix length by which the default Key folds an
	// IPv6 client: 64, 56 or 48. Zero means 64. A /48 makes a flood from
	// one /48 one key.
	IPv6Prefix int
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
	// Tiers are more limiters a request may be limited by, each under
	// its name, which the headers give as the policy's.
	Tiers []admit.Tier
	// Choose returns the name of the tier that limits r: from a header, a
	// claim, the method or the route. "" is New's limiter. A name that is
	// no tier's fails the request through Error (admit.ErrNoTier). Nil
	// limits every request by New's limiter.
	Choose func(r *http.Request) string
	// Cost returns what r costs, charged to its limiter (IncomingN): by
	// the size of a batch or an upload, or a query's weight. An error, or
	// a cost below 1, fails the request through Error. Nil charges 1.
	Cost func(r *http.Request) (int64, error)
}

// New returns middleware that asks l about every request, with commit:
// a rejected request gets o.Rejected, an allowed one waits out its delay
// (unless o.NoDelay) and goes on to the next handler; a Conn's request is
// left (Leaving, with its latency) when the next handler returns. Errors:
// ErrNilLimiter, ErrBadProxy for an invalid TrustedProxies prefix,
// ErrBadIPv6Prefix for an IPv6Prefix other than 0, 64, 56 or 48,
// ErrBadPolicy for a bad PolicyName, a negative Policy or a bad tier
// (admit.ErrBadTier).
func New(l limiter.Limiter, o Options) (func(http.Handler) http.Handler, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	for _, p := range o.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: %v", ErrBadProxy, p)
		}
	}
	addrKey, err := AddrKeyFunc(o.IPv6Prefix)
	if err != nil {
		return nil, err
	}
	g, err := admit.New(l, admit.Options{Policy: o.Policy, PolicyName: o.PolicyName, NoHeaders: o.NoHeaders, NoDelay: o.NoDelay, Wait: o.Wait, Tiers: o.Tiers})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	m := &middleware{g: g, o: o}
	if m.o.Key == nil {
		trusted := o.TrustedProxies
		m.o.Key = func(r *http.Request) (string, error) {
			a, err := ClientAddr(r, trusted)
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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}, nil
}

type middleware struct {
	g *admit.Gate
	o Options
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	key, err := m.o.Key(r)
	if err != nil {
		m.o.Error(w, r, err)
		return
	}
	g := m.g
	if m.o.Choose != nil {
		if g, err = g.Tier(m.o.Choose(r)); err != nil {
			m.o.Error(w, r, err)
			return
		}
	}
	n := int64(1)
	if m.o.Cost != nil {
		if n, err = m.o.Cost(r); err != nil {
			m.o.Error(w, r, err)
			return
		}
	}
	var a admit.Admission
	err = g.Decide(r.Context(), key, n, &a)
	setHeaders(w.Header(), &a.Headers)
	switch {
	case errors.Is(err, admit.ErrCancelled):
		http.Error(w, "request cancelled while delayed", http.StatusServiceUnavailable)
	case err != nil:
		m.o.Error(w, r, err)
	case !a.Decision.Allowed:
		m.o.Rejected(w, r, a.Decision)
	default:
		defer a.Pass.Done()
		next.ServeHTTP(w, r)
	}
}

// setHeaders sets fs on h with two allocations, whatever their number: one
// string holds every value, and one slice backs every header's.
func setHeaders(h http.Header, fs *headers.Fields) {
	n := fs.Len()
	if n == 0 {
		return
	}
	var b [256]byte
	all := b[:0]
	for i := range n {
		_, v := fs.At(i)
		all = append(all, v...)
	}
	s, vals := string(all), make([]string, n)
	for i := range n {
		f, v := fs.At(i)
		vals[i], s = s[:len(v)], s[len(v):]
		h[f.Name()] = vals[i : i+1 : i+1]
	}
}

func tooManyRequests(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
	http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
}

func internalError(w http.ResponseWriter, r *http.Request, err error) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}
