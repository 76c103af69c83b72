package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/headers"
)

// Options configures the middleware. The zero value keys requests by
// client address, with no proxies trusted. It writes the headers of the
// limiter's policy, and waits out delays. It answers rejections with 429
// and errors with 500.
type Options struct {
	// Options are the options every adapter shares: the headers' policy,
	// delays, tiers, dry runs, exemptions and refunds. Exempt is compared
	// with ClientAddr under TrustedProxies. Refund reads the status the
	// next handler wrote, 200 if it wrote none.
	admit.Options
	// Skip lets a request through undecided when it returns true: no
	// decision, no headers, no key. A health check, for one.
	Skip func(r *http.Request) bool
	// Key returns a request's limiter key. Nil keys by client address:
	// ClientAddr with TrustedProxies, made a key by AddrKeyFunc with
	// IPv6Prefix. An error fails the request through Error.
	Key func(r *http.Request) (string, error)
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (ParsePrefixes reads them from strings); used by the default Key
	// and by Exempt.
	TrustedProxies []netip.Prefix
	// IPv6Prefix is the prefix length by which the default Key folds an
	// IPv6 client: 64, 56 or 48. Zero means 64. A /48 makes a flood from
	// one /48 one key.
	IPv6Prefix int
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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(w, r, next) })
	}, nil
}

type middleware struct {
	g       *admit.Gate
	o       Options
	addrKey func(netip.Addr) string
}

// key returns r's limiter key, and exempt true for a request that Exempt
// lets through.
func (m *middleware) key(r *http.Request) (key string, exempt bool, err error) {
	if m.o.Key == nil {
		a, err := ClientAddr(r, m.o.TrustedProxies)
		if err != nil {
			return "", false, err
		}
		if m.g.Exempts() && m.g.Exempt(a) {
			return "", true, nil
		}
		return m.addrKey(a), false, nil
	}
	if m.g.Exempts() {
		if a, err := ClientAddr(r, m.o.TrustedProxies); err == nil && m.g.Exempt(a) {
			return "", true, nil
		}
	}
	key, err = m.o.Key(r)
	return key, false, err
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if m.o.Skip != nil && m.o.Skip(r) {
		next.ServeHTTP(w, r)
		return
	}
	key, exempt, err := m.key(r)
	if err != nil {
		m.o.Error(w, r, err)
		return
	}
	if exempt {
		next.ServeHTTP(w, r)
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
	case a.Pass.Refunds():
		serveRefund(w, r, next, a.Pass)
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

// tooManyRequests answers a rejection as http.Error does, with values
// made once: a flood of rejections allocates no header of its own.
func tooManyRequests(w http.ResponseWriter, r *http.Request, d limiter.Decision) {
	h := w.Header()
	delete(h, "Content-Length")
	h["Content-Type"] = textPlain[:1:1]
	h["X-Content-Type-Options"] = noSniff[:1:1]
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(tooManyBody)
}

// The values of tooManyRequests. Each header value is capped, so that an
// Add copies it.
var (
	textPlain   = []string{"text/plain; charset=utf-8"}
	noSniff     = []string{"nosniff"}
	tooManyBody = []byte(http.StatusText(http.StatusTooManyRequests) + "\n")
)

func internalError(w http.ResponseWriter, r *http.Request, err error) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}
