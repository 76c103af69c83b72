package admit

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/headers"
)

// Options configures a Gate. The zero value writes the headers of the
// limiter's policy and waits out delays with a timer.
type Options struct {
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
	// NoDelay lets a delayed request through at once, as nginx's nodelay:
	// the delay still counts against the limit, but nobody waits.
	NoDelay bool
	// Wait waits out a decision's delay and returns ctx's error if ctx
	// ends first. Nil is Sleep. Tests inject a fake.
	Wait func(ctx context.Context, d time.Duration) error
	// Tiers are more limiters a request may be limited by, each under
	// its name (Gate.Tier). A tier's Gate has the other options of these.
	Tiers []Tier
	// DryRun decides and commits as usual but never rejects or delays.
	// A would-be rejection lets the request through and is counted in
	// Stats. A would-be delay is not waited. Rate limit headers are left
	// out unless DryRunHeaders. A limiter with a DryRun() bool method, as
	// those of package limiter, also runs dry while it returns true.
	DryRun bool
	// DryRunHeaders writes the rate limit headers in a dry run too.
	// Retry-After is never written in a dry run.
	DryRunHeaders bool
	// Stats counts what the Gate does, for the caller to read. Nil gives
	// the Gate a Stats of its own (Gate.Stats). Tiers count in it too.
	Stats *Stats
	// Exempt are the client address ranges that are never decided: no
	// decision, no headers, no key touched. The middlewares compare them
	// with the client address of their default Key, even when Key is set.
	Exempt []netip.Prefix
	// Refund gives an admitted request's cost back when it returns true
	// for the status the handler answered (Pass.Finish). Nil refunds
	// nothing. It is ignored for a Conn, whose requests are left anyway.
	Refund func(status int) bool
}

// Stats counts a Gate's decisions in this process. It is safe for use by
// many goroutines. The zero value is ready to use.
type Stats struct {
	dryRunRejected atomic.Uint64
}

// DryRunRejected returns how many requests a dry run let through that
// the limiter rejected.
func (s *Stats) DryRunRejected() uint64 { return s.dryRunRejected.Load() }

// Tier is a limiter that a middleware picks per request by name: for a
// plan of its own (free or paid), a method or a route. Each tier keeps
// its own state in the zone under its limiter's kind and name, so every
// process that builds the same tiers limits a request alike.
type Tier struct {
	// Name names the tier, and its policy in RateLimit-Policy and
	// RateLimit. It is printable ASCII, and unique among the tiers.
	Name string
	// Limiter decides on the tier's requests.
	Limiter limiter.Limiter
	// Policy is the quota the tier's headers announce, as Options.Policy.
	Policy limiter.Policy
}

// Gate decides on requests with one limiter, or with one of its tiers.
type Gate struct {
	l        limiter.Limiter
	o        Options
	tiers    map[string]*Gate             // Options.Tiers', by name
	w        atomic.Pointer[policyWriter] // of the last policy seen
	policer  policer                      // the limiter's, when Options fixes none
	leaver   leaver
	resetter resetter
	dry      dryRunner // the limiter's live dry run and zone count, or nil
	stats    *Stats
}

// dryRunner is a limiter with a live dry run and a count of its dry-run
// rejections in its zone, as those of package limiter.
type dryRunner interface {
	DryRun() bool
	AddDryRunRejected(n int64) error
}

// leaver is a limiter whose counted requests must be ended (limiter.Conn).
type leaver interface {
	Leaving(ctx context.Context, key string, latency time.Duration) (int64, error)
}

// leaverN is a leaver that ends a request of a cost (limiter.Conn).
type leaverN interface {
	LeavingN(ctx context.Context, key string, n int64, latency time.Duration) (int64, error)
}

// resetter is a limiter that reads a key's reset on demand. limiter.Count
// is one: its dry runs leave Decision.ResetAfter 0 when they allow.
type resetter interface {
	ResetAfter(ctx context.Context, key string) (time.Duration, error)
}

// policer is a limiter that states its policy.
type policer interface {
	Policy() limiter.Policy
}

// policyWriter is the headers' Writer of one policy; p is nil when no
// policy is known.
type policyWriter struct {
	w *headers.Writer
	p *limiter.Policy
}

// New returns a Gate that asks l, and a Gate of each of o.Tiers. Errors:
// ErrNilLimiter, ErrBadPolicy for a bad PolicyName or a negative Policy,
// ErrBadTier for a tier without a name, or a name taken twice,
// ErrBadExempt for an invalid Exempt prefix.
func New(l limiter.Limiter, o Options) (*Gate, error) {
	for _, p := range o.Exempt {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: %v", ErrBadExempt, p)
		}
	}
	if o.Stats == nil {
		o.Stats = new(Stats)
	}
	g, err := newGate(l, o)
	if err != nil || len(o.Tiers) == 0 {
		return g, err
	}
	g.tiers = make(map[string]*Gate, len(o.Tiers))
	for _, t := range o.Tiers {
		if t.Name == "" {
			return nil, fmt.Errorf("%w: a tier has no name", ErrBadTier)
		}
		if _, dup := g.tiers[t.Name]; dup {
			return nil, fmt.Errorf("%w: two tiers named %q", ErrBadTier, t.Name)
		}
		to := o
		to.Policy, to.PolicyName, to.Tiers = t.Policy, t.Name, nil
		tg, err := newGate(t.Limiter, to)
		if err != nil {
			return nil, fmt.Errorf("tier %q: %w", t.Name, err)
		}
		g.tiers[t.Name] = tg
	}
	return g, nil
}

// Tier returns the Gate of the tier named name, or g itself for "".
// Errors: ErrNoTier for a name that is no tier's.
func (g *Gate) Tier(name string) (*Gate, error) {
	if name == "" {
		return g, nil
	}
	if t := g.tiers[name]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNoTier, name)
}

// Stats returns the counters of g and its tiers: Options.Stats, or the
// Gate's own.
func (g *Gate) Stats() *Stats { return g.stats }

// Exempts reports whether any client address is exempt. A middleware
// finds the client address for Exempt only when it is true.
func (g *Gate) Exempts() bool { return len(g.o.Exempt) > 0 }

// Exempt reports whether a falls in an Options.Exempt prefix. An
// IPv4-mapped IPv6 address is compared as IPv4.
func (g *Gate) Exempt(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range g.o.Exempt {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// newGate is New of one limiter, without tiers.
func newGate(l limiter.Limiter, o Options) (*Gate, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	if o.Policy.Limit < 0 || o.Policy.Window < 0 {
		return nil, fmt.Errorf("%w: %+v", ErrBadPolicy, o.Policy)
	}
	g := &Gate{l: l, o: o, stats: o.Stats}
	var fixed *limiter.Policy
	if o.Policy.Limit > 0 {
		fixed = &o.Policy
	} else if p, ok := l.(policer); ok {
		g.policer = p
		pol := p.Policy()
		fixed = &pol
	}
	w, err := headers.New(o.PolicyName, fixed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	g.w.Store(&policyWriter{w: w, p: fixed})
	g.leaver, _ = l.(leaver)
	g.resetter, _ = l.(resetter)
	g.dry, _ = l.(dryRunner)
	if g.o.Wait == nil {
		g.o.Wait = Sleep
	}
	return g, nil
}

// Pass is a request Admit let through. Its zero value is a Pass whose Done
// and Finish do nothing.
type Pass struct {
	l      leaver
	u      limiter.Limiter // the limiter, for UncommitN
	ctx    context.Context
	key    string
	n      int64 // the request's cost
	start  time.Time
	refund func(status int) bool // Options.Refund, for a committed non-Conn request
}

// Refunds reports whether Finish needs the response status. It does when
// Options.Refund is set, the request was committed and the limiter is no
// Conn. Otherwise Done does all that Finish does.
func (p Pass) Refunds() bool { return p.refund != nil }

// Finish ends the request as Done does, once its handler answered status.
// If Options.Refund returns true for status, the request's cost is given
// back (the limiter's UncommitN). Errors of UncommitN are dropped.
func (p Pass) Finish(status int) {
	if p.refund != nil && p.refund(status) {
		ctx := p.ctx
		if ctx.Err() != nil {
			ctx = context.WithoutCancel(ctx) // allocates: only when needed
		}
		p.u.UncommitN(ctx, p.key, p.n)
	}
	p.Done()
}

// Done ends the request when its handler has returned: a concurrency
// limiter's request is left, with its latency (limiter.Conn's LeavingN of
// the request's cost). For other limiters it does nothing.
//
// Done ignores Options.Refund: a caller that has the status calls Finish.
func (p Pass) Done() {
	if p.l == nil {
		return
	}
	ctx, latency := context.WithoutCancel(p.ctx), time.Since(p.start)
	switch ln, ok := p.l.(leaverN); {
	case p.n <= 1:
		p.l.Leaving(ctx, p.key, latency)
	case ok:
		ln.LeavingN(ctx, p.key, p.n, latency)
	default:
		p.u.UncommitN(ctx, p.key, p.n-1)
		p.l.Leaving(ctx, p.key, latency)
	}
}

// Admit is AdmitN of a request of cost 1.
func (g *Gate) Admit(ctx context.Context, key string, set func(name, value string)) (limiter.Decision, Pass, error) {
	return g.AdmitN(ctx, key, 1, set)
}

// AdmitN is Decide that sets the headers through set, a string per value.
func (g *Gate) AdmitN(ctx context.Context, key string, n int64, set func(name, value string)) (limiter.Decision, Pass, error) {
	var a Admission
	err := g.Decide(ctx, key, n, &a)
	for i := range a.Headers.Len() {
		f, v := a.Headers.At(i)
		set(f.Name(), string(v))
	}
	return a.Decision, a.Pass, err
}

// Admission is a Gate's answer to one request. The zero value is ready for
// Decide, which overwrites it whole.
type Admission struct {
	// Decision is the limiter's decision. Allowed false is a rejection,
	// which the caller answers.
	Decision limiter.Decision
	// Pass ends an allowed request: the caller calls its Done after the
	// handler.
	Pass Pass
	// Headers are the response headers of the decision: the rate limit
	// headers unless NoHeaders, and Retry-After on a rejection (I3). A
	// dry run has them only with DryRunHeaders, and never Retry-After.
	Headers headers.Fields
	// DryRunRejected reports a rejection that DryRun let through. The
	// Decision is then allowed, with the limiter's other fields.
	DryRunRejected bool
}

// Decide decides on a request of cost n for key, with commit, into a. An
// allowed request has waited out its delay when Decide returns, unless
// NoDelay. A request cancelled while delayed gives its cost back. Decide
// allocates nothing of its own, and a may live on the caller's stack.
//
// A dry run is in force when Options.DryRun is set, or when the limiter's
// DryRun method returns true. In a dry run, a rejection comes back
// allowed, with a.DryRunRejected set. It is counted in Stats, and in the
// zone through the limiter's AddDryRunRejected, one per request. A delay
// is not waited.
//
// Errors: the limiter's, limiter.ErrBadCost for n below 1 among them, for
// the caller to answer as a failure. ErrCancelled with ctx's error when
// ctx ends during the delay: a's headers are set then too.
func (g *Gate) Decide(ctx context.Context, key string, n int64, a *Admission) error {
	a.Pass = Pass{}
	a.Headers.Reset()
	a.DryRunRejected = false
	d, err := g.l.IncomingN(ctx, key, n, true)
	a.Decision = d
	if err != nil {
		return err
	}
	dry := g.o.DryRun || g.dry != nil && g.dry.DryRun()
	if !g.o.NoHeaders && (!dry || g.o.DryRunHeaders) {
		g.headers(ctx, key, d, &a.Headers)
	}
	if dry && !d.Allowed {
		// A rejection commits nothing, so there is nothing to end (I1).
		g.stats.dryRunRejected.Add(1)
		if g.dry != nil {
			g.dry.AddDryRunRejected(1) // the request passes all the same
		}
		a.Decision.Allowed, a.DryRunRejected = true, true
		return nil
	}
	if !d.Allowed {
		a.Headers.AppendRetryAfter(d)
		return nil
	}
	var pass Pass
	switch {
	case !d.Committed:
	case g.leaver != nil:
		pass = Pass{l: g.leaver, u: g.l, ctx: ctx, key: key, n: n, start: time.Now()}
	case g.o.Refund != nil:
		pass = Pass{u: g.l, ctx: ctx, key: key, n: n, refund: g.o.Refund}
	}
	if d.Delay > 0 && !g.o.NoDelay && !dry {
		if err := g.o.Wait(ctx, d.Delay); err != nil {
			if pass.l != nil {
				pass.Done()
			} else if d.Committed {
				g.l.UncommitN(context.WithoutCancel(ctx), key, n)
			}
			return fmt.Errorf("%w: %w", ErrCancelled, err)
		}
	}
	a.Pass = pass
	return nil
}

// headers adds the rate limit headers of d to fs.
func (g *Gate) headers(ctx context.Context, key string, d limiter.Decision, fs *headers.Fields) {
	pw := g.w.Load()
	if g.policer != nil {
		if p := g.policer.Policy(); pw.p == nil || p != *pw.p {
			pw = g.newPolicy(p)
		}
	}
	reset := d.ResetAfter
	if reset == 0 && d.Allowed && g.resetter != nil {
		reset, _ = g.resetter.ResetAfter(ctx, key) // the headers go without it on error
	}
	pw.w.Append(fs, d, reset)
}

// newPolicy stores and returns the Writer of policy p, which the limiter
// changed to (a Conn's SetMax). New checked its name.
func (g *Gate) newPolicy(p limiter.Policy) *policyWriter {
	pw := g.w.Load()
	if w, err := headers.New(g.o.PolicyName, &p); err == nil {
		pw = &policyWriter{w: w, p: &p}
		g.w.Store(pw)
	}
	return pw
}

// Sleep waits d or until ctx ends, and then returns ctx's error: the Wait
// of Options' zero value, for a Wait that wraps it.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
