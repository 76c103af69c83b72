package limiter

import (
	"errors"

	"github.com/shmzone/shmzone/dict"
)

var (
	// ErrBadRate is returned by ParseRate for a string that is not "Nr/s" or
	// "Nr/m", and by the constructors for a rate that is not a positive,
	// finite number.
	ErrBadRate = errors.New("limiter: bad rate")
	// ErrBadBurst is returned by the constructors for a negative or
	// non-finite burst, and by NewGCRA for a burst below 1.
	ErrBadBurst = errors.New("limiter: bad burst")
	// ErrBadLimit is returned by the constructors for a limit (or a Conn's
	// max) below 1.
	ErrBadLimit = errors.New("limiter: bad limit")
	// ErrBadWindow is returned by the constructors for a window shorter than
	// a millisecond, or one whose arithmetic would overflow.
	ErrBadWindow = errors.New("limiter: bad window")
	// ErrBadDelay is returned by NewConn for a negative delay, and by
	// NewLeasedConn for a lease shorter than a millisecond.
	ErrBadDelay = errors.New("limiter: bad delay")
	// ErrNilDict is returned by the constructors for a nil dictionary.
	ErrNilDict = errors.New("limiter: nil dict")
	// ErrBadName is returned by the constructors (and CheckName) for a
	// limiter name that is empty, longer than MaxNameLen bytes, or holds
	// '|' or an ASCII control character.
	ErrBadName = errors.New("limiter: bad name")
	// ErrAbused is returned when the dictionary holds, under a limiter's key,
	// a value of another kind or size than that limiter stores: another
	// limiter or other code writes the same key ("shdict abused" in
	// lua-resty-limit-traffic). The value is not interpreted.
	ErrAbused = errors.New("limiter: shdict abused")
	// ErrTooManyHolders is returned by a leased Conn when MaxHolders
	// processes already hold slots of one key.
	ErrTooManyHolders = errors.New("limiter: too many lease holders")
	// ErrMismatch is returned by Combine when the limiters and keys differ in
	// number, or a limiter is nil.
	ErrMismatch = errors.New("limiter: limiters and keys do not match")
	// ErrNotFound is returned by Req.Uncommit and Conn.Leaving for a key
	// that holds no state. It is dict.ErrNotFound, so one errors.Is check
	// covers both packages.
	ErrNotFound = dict.ErrNotFound
	// ErrLockTimeout is returned (wrapped with the key) when a decision
	// waited the dictionary's lock timeout (dict.Options.LockTimeout) for a
	// key's shard that a live process held: the decision was not made and
	// nothing was counted. It is dict.ErrLockTimeout; httplimit passes it,
	// like every limiter error, to Options.Error.
	ErrLockTimeout = dict.ErrLockTimeout
)
