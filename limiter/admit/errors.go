package admit

import "errors"

var (
	// ErrNilLimiter is returned by New for a nil limiter.
	ErrNilLimiter = errors.New("admit: nil limiter")
	// ErrBadPolicy is returned by New for a policy name that is not
	// printable ASCII, or a negative limit or window.
	ErrBadPolicy = errors.New("admit: bad policy")
	// ErrCancelled is returned by Admit, with the context's error, when
	// the context ends while an allowed request waits out its delay. The
	// request was given back (I1); a middleware answers 503.
	ErrCancelled = errors.New("admit: request cancelled while delayed")
	// ErrBadTier is returned by New for a tier without a name, or two
	// tiers of one name.
	ErrBadTier = errors.New("admit: bad tier")
	// ErrBadExempt is returned by New for an Exempt prefix that is not
	// valid.
	ErrBadExempt = errors.New("admit: bad exempt prefix")
	// ErrNoTier is returned by Gate.Tier for a name that is no tier's.
	ErrNoTier = errors.New("admit: no such tier")
)
