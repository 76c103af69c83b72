package limiter

import (
	"errors"

	"github.com/shmzone/shmzone/dict"
)

var (
	// ErrBadRate is returned by ParseRate for a string that is not a
	// positive, finite number with an optional "r/s" or "r/m" unit. The
	// constructors return it for a rate that is not a positive, finite
	// number.
	ErrBadRate = errors.New("limiter: bad rate")
	// ErrBadBurst is returned by the constructors for a negative,
	// non-finite or too large burst, and by NewGCRA for a burst below 1.
	ErrBadBurst = errors.New("limiter: bad burst")
	// ErrBadLimit is returned by the constructors and Conn.SetMax for a
	// limit below 1. A Conn's limit is its max. NewCount also returns it
	// for a limit above 2^53.
	ErrBadLimit = errors.New("limiter: bad limit")
	// ErrBadWindow is returned by the constructors for a window shorter
	// than a millisecond, or one whose arithmetic would overflow.
	ErrBadWindow = errors.New("limiter: bad window")
	// ErrBadDelay is returned by NewConn for a negative delay.
	// NewLeasedConn also returns it for a lease shorter than a millisecond
	// or longer than a day.
	ErrBadDelay = errors.New("limiter: bad delay")
	// ErrNilDict is returned by the constructors for a nil dictionary.
	ErrNilDict = errors.New("limiter: nil dict")
	// ErrBadState is returned when a key holds a state that its limiter
	// cannot have written. The value may be of another kind or size: that
	// is ErrAbused, which is of this class. Or it may be of the right kind,
	// with contents that no limiter of its type writes. Such contents are
	// NaN, an infinity, a number beyond the range its arithmetic keeps
	// exact, or a time further ahead than any of its windows.
	//
	// The limiter decides nothing on such a state and leaves it as it is.
	// It returns this error, wrapped with the key. Package redistier
	// returns it too, as redistier.ErrBadState, for a Redis value it did
	// not write. It is not an outage: no failure policy applies to it.
	ErrBadState = errors.New("limiter: bad state")
	// ErrBadName is returned by CheckName and the constructors for a bad
	// limiter name. A name is bad if it is empty, longer than MaxNameLen
	// bytes, or holds '|' or an ASCII control character.
	ErrBadName = errors.New("limiter: bad name")
	// ErrNameClash is returned by a constructor when this process holds a
	// limiter of the same kind and name over the same zone. That limiter
	// was built with other parameters. The two would share each key's
	// state, each deciding by its own parameters. The error names the
	// limiter and both sets of parameters.
	ErrNameClash = errors.New("limiter: name clash")
	// ErrAbused is returned when a limiter's key holds a value of another
	// kind or size than the limiter stores. Another limiter or other code
	// writes the same key. lua-resty-limit-traffic calls this "shdict
	// abused". The limiter does not interpret the value.
	// errors.Is(err, ErrBadState) holds for it.
	ErrAbused error = &classError{"limiter: shdict abused", ErrBadState}
	// ErrTooManyHolders is returned by a leased Conn when MaxHolders
	// processes already hold slots of one key.
	ErrTooManyHolders = errors.New("limiter: too many lease holders")
	// ErrBadCost is returned by IncomingN and UncommitN for a cost below 1.
	// UncommitN also returns it for a cost above the most IncomingN admits
	// at once, since no request of that cost was counted. A Conn's bound is
	// 2^53.
	ErrBadCost = errors.New("limiter: bad cost")
	// ErrMismatch is returned by Combine when the limiters and keys differ
	// in number or are none, or when a limiter is nil.
	ErrMismatch = errors.New("limiter: limiters and keys do not match")
	// ErrNotFound is returned by Req.Uncommit and Conn.Leaving for a key
	// that holds no state. It is dict.ErrNotFound, so one errors.Is check
	// covers both packages.
	ErrNotFound = dict.ErrNotFound
	// ErrLockTimeout is returned, wrapped with the key, when a decision
	// waited dict.Options.LockTimeout for a key's shard that a live process
	// held. The decision was not made, and nothing was counted. It is
	// dict.ErrLockTimeout. httplimit passes it to Options.Error, like every
	// limiter error.
	ErrLockTimeout = dict.ErrLockTimeout
)

// classError is a sentinel of a class: errors.Is finds the class in it.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string        { return e.msg }
func (e *classError) Is(target error) bool { return target == e.class }
