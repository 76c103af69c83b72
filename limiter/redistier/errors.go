package redistier

import "errors"

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
	// failed on the server: a key that holds a value of another type or
	// shape (another program writes it). No failure policy applies.
	ErrScript = errors.New("redistier: script failed")
	// ErrBadKey is returned for an empty key.
	ErrBadKey = errors.New("redistier: empty key")
)
