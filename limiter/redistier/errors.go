package redistier

import (
	"errors"

	"github.com/shmzone/shmzone/limiter"
)

var (
	// ErrNilClient is returned by the constructors for a nil Redis client.
	ErrNilClient = errors.New("redistier: nil client")
	// ErrNoContextTimeout is returned by the constructors for a
	// *redis.Client or *redis.ClusterClient built without
	// ContextTimeoutEnabled: such a client ignores the per-call timeout and
	// a hung server would hold a decision for its ReadTimeout.
	ErrNoContextTimeout = errors.New("redistier: client does not honour context deadlines (set ContextTimeoutEnabled)")
	// ErrNoLocal is returned by the constructors when the policy is
	// FailLocal and Options.Local is nil.
	ErrNoLocal = errors.New("redistier: FailLocal without a local limiter")
	// ErrUnavailable is returned, wrapping the client's error, when Redis
	// did not answer within the timeout or the connection failed, and the
	// policy is FailError.
	ErrUnavailable = errors.New("redistier: redis unavailable")
	// ErrScript is returned, wrapping Redis's error reply, when a script
	// failed on the server for another reason than the key's state (that is
	// ErrBadState). No failure policy applies.
	ErrScript = errors.New("redistier: script failed")
	// ErrBadState is limiter.ErrBadState, returned, wrapped with the key,
	// when a key holds a value that no limiter of this package writes there
	// (see the package documentation); one errors.Is check covers both
	// packages. It is not an outage: no failure policy applies to it.
	ErrBadState = limiter.ErrBadState
	// ErrBadKey is returned for an empty key.
	ErrBadKey = errors.New("redistier: empty key")
)
