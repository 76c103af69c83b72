package shmprom

import "errors"

var (
	// ErrNilDict is returned by AddDict for a nil dictionary.
	ErrNilDict = errors.New("shmprom: nil dict")
	// ErrNilLimiter is returned by AddLimiter for a nil limiter.
	ErrNilLimiter = errors.New("shmprom: nil limiter")
	// ErrDuplicate is returned by AddDict and AddLimiter for a name already
	// added and not removed (RemoveDict, RemoveLimiter), whose metrics
	// would collide.
	ErrDuplicate = errors.New("shmprom: duplicate name")
)
