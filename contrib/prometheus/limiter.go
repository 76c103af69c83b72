package shmprom

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// Limiter counts the decisions of the limiter it wraps (AddLimiter).
type Limiter struct {
	name                      string
	l                         limiter.Limiter
	allowed, rejected, errors atomic.Uint64
	host                      atomic.Pointer[hostHandles] // CountHostIn's counts, or nil
	dry                       dryRunner                   // the wrapped limiter's dry run, or nil
}

// dryRunner is a limiter with a live dry run and a count of its dry-run
// rejections in its zone, as those of package limiter.
type dryRunner interface {
	DryRun() bool
	AddDryRunRejected(n int64) error
	DryRunRejected() (int64, error)
}

// DryRun is the wrapped limiter's. It is false for a limiter without a
// DryRun method.
func (w *Limiter) DryRun() bool {
	return w.dry != nil && w.dry.DryRun()
}

// AddDryRunRejected is the wrapped limiter's. It does nothing for a
// limiter without one, which keeps no count.
func (w *Limiter) AddDryRunRejected(n int64) error {
	if w.dry == nil {
		return nil
	}
	return w.dry.AddDryRunRejected(n)
}

// Incoming is the wrapped limiter's, counted.
func (w *Limiter) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	d, err := w.l.Incoming(ctx, key, commit)
	w.count(d, err)
	return d, err
}

// IncomingN is the wrapped limiter's, counted as one decision.
func (w *Limiter) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	d, err := w.l.IncomingN(ctx, key, n, commit)
	w.count(d, err)
	return d, err
}

// count counts a decision d with error err.
func (w *Limiter) count(d limiter.Decision, err error) {
	h := w.host.Load()
	switch {
	case err != nil:
		w.errors.Add(1)
		if h != nil {
			h.errors.Add(1)
		}
	case d.Allowed:
		w.allowed.Add(1)
		if h != nil {
			h.allowed.Add(1)
		}
	default:
		w.rejected.Add(1)
		if h != nil {
			h.rejected.Add(1)
		}
	}
}

// Uncommit is the wrapped limiter's.
func (w *Limiter) Uncommit(ctx context.Context, key string) error {
	return w.l.Uncommit(ctx, key)
}

// UncommitN is the wrapped limiter's.
func (w *Limiter) UncommitN(ctx context.Context, key string, n int64) error {
	return w.l.UncommitN(ctx, key, n)
}

// Reset is the wrapped limiter's.
func (w *Limiter) Reset(ctx context.Context, key string) error {
	return w.l.Reset(ctx, key)
}

// The optional methods middleware looks for, each passed through only when
// the wrapped limiter has it: a wrapper that claimed Leaving for a limiter
// without it would make httplimit skip its Uncommit.
type (
	policer  interface{ Policy() limiter.Policy }
	resetter interface {
		ResetAfter(ctx context.Context, key string) (time.Duration, error)
	}
	leaver interface {
		Leaving(ctx context.Context, key string, latency time.Duration) (int64, error)
	}
	leaverN interface {
		LeavingN(ctx context.Context, key string, n int64, latency time.Duration) (int64, error)
	}
	withPolicy     struct{ p policer }
	withResetAfter struct{ r resetter }
	// withLeaving passes Leaving on, and LeavingN: the wrapped limiter's
	// own, or its Leaving of one slot and UncommitN of the others.
	withLeaving struct {
		l leaver
		u limiter.Limiter
	}
)

func (x withPolicy) Policy() limiter.Policy { return x.p.Policy() }
func (x withResetAfter) ResetAfter(ctx context.Context, key string) (time.Duration, error) {
	return x.r.ResetAfter(ctx, key)
}
func (x withLeaving) Leaving(ctx context.Context, key string, latency time.Duration) (int64, error) {
	return x.l.Leaving(ctx, key, latency)
}
func (x withLeaving) LeavingN(ctx context.Context, key string, n int64, latency time.Duration) (int64, error) {
	if ln, ok := x.l.(leaverN); ok {
		return ln.LeavingN(ctx, key, n, latency)
	}
	if n > 1 {
		if err := x.u.UncommitN(ctx, key, n-1); err != nil {
			return 0, err
		}
	}
	return x.l.Leaving(ctx, key, latency)
}

// wrapped returns w with exactly the optional methods of the limiter it
// wraps.
func (w *Limiter) wrapped() limiter.Limiter {
	p, hasP := w.l.(policer)
	r, hasR := w.l.(resetter)
	l, hasL := w.l.(leaver)
	P, R, L := withPolicy{p}, withResetAfter{r}, withLeaving{l, w.l}
	switch {
	case hasP && hasR && hasL:
		return struct {
			*Limiter
			withPolicy
			withResetAfter
			withLeaving
		}{w, P, R, L}
	case hasP && hasR:
		return struct {
			*Limiter
			withPolicy
			withResetAfter
		}{w, P, R}
	case hasP && hasL:
		return struct {
			*Limiter
			withPolicy
			withLeaving
		}{w, P, L}
	case hasR && hasL:
		return struct {
			*Limiter
			withResetAfter
			withLeaving
		}{w, R, L}
	case hasP:
		return struct {
			*Limiter
			withPolicy
		}{w, P}
	case hasR:
		return struct {
			*Limiter
			withResetAfter
		}{w, R}
	case hasL:
		return struct {
			*Limiter
			withLeaving
		}{w, L}
	}
	return w
}
