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
	// ContextTimeoutEnabled. Such a client ignores the per-call timeout, so
	// a hung server would hold a decision for its ReadTimeout.
	ErrNoContextTimeout = errors.New("redistier: client does not honour context deadlines (set ContextTimeoutEnabled)")
	// ErrNoLocal is returned by the constructors when the policy is
	// FailLocal and Options.Local is nil.
	ErrNoLocal = errors.New("redistier: FailLocal without a local limiter")
	// ErrUnavailable is returned when Redis did not answer within the
	// timeout or the connection failed, and the policy is FailError. It
	// wraps the client's error. Reset returns it whatever the policy.
	ErrUnavailable = errors.New("redistier: redis unavailable")
	// ErrScript is returned when a script failed on the server for a reason
	// other than the key's state. It wraps Redis's error reply. No failure
	// policy applies to it.
	ErrScript = errors.New("redistier: script failed")
	// ErrBadState is limiter.ErrBadState. It is returned, wrapped with the
	// key, when a key holds a value that no limiter of this package writes
	// there. One errors.Is check covers both packages. It is not an outage,
	// so no failure policy applies to it.
	ErrBadState = limiter.ErrBadState
	// ErrBadLive is returned, wrapped with the key, when a limiter's live
	// hash holds numbers its constructor refuses, or is not a hash. It is
	// not an outage, so no failure policy applies to it. UnsetLive clears
	// it.
	ErrBadLive = errors.New("redistier: bad live numbers")
	// ErrBadKey is returned for an empty key.
	ErrBadKey = errors.New("redistier: empty key")
)
