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

var (
	// ErrBadInterval is returned by CountHostIn for an interval that is not
	// positive.
	ErrBadInterval = errors.New("shmprom: bad sync interval")
	// ErrHostCounts is returned by CountHostIn for a Collector that counts
	// in a zone already.
	ErrHostCounts = errors.New("shmprom: host counts already kept")
	// ErrKeyTooLong is returned by CountHostIn and AddLimiter for a limiter
	// name that makes a zone key longer than dict.MaxKeyLen.
	ErrKeyTooLong = errors.New("shmprom: limiter name too long for host counts")
)
