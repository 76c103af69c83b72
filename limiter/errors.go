package limiter

import (
	"errors"

	"github.com/shmzone/shmzone/dict"
)

var (
	// ErrBadRate is returned by ParseRate for a string that is not a
	// positive, finite number with an optional "r/s" or "r/m" unit, and by
	// the constructors for a rate that is not a positive, finite number.
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
	// ErrBadState is returned when a key holds a state that the limiter
	// cannot have written: a value of another kind or size (ErrAbused, which
	// is of this class), or one of the right kind whose contents no limiter
	// of its type writes: NaN, an infinity, a number beyond the range its
	// arithmetic keeps exact, a time further ahead than any of its windows.
	// The limiter decides nothing on such a state, leaves it as it is, and
	// returns this error, wrapped with the key; package redistier returns
	// it too (as redistier.ErrBadState) for a Redis value it did not write.
	// It is not an outage: no failure policy applies to it.
	ErrBadState = errors.New("limiter: bad state")
	// ErrBadName is returned by the constructors (and CheckName) for a
	// limiter name that is empty, longer than MaxNameLen bytes, or holds
	// '|' or an ASCII control character.
	ErrBadName = errors.New("limiter: bad name")
	// ErrNameClash is returned by the constructors when this process holds
	// a limiter of the same kind and name over the same zone, built with
	// other parameters. The two would share each key's state, each deciding
	// by its own parameters. The error names the limiter and both sets of
	// parameters.
	ErrNameClash = errors.New("limiter: name clash")
	// ErrAbused is returned when the dictionary holds, under a limiter's key,
	// a value of another kind or size than that limiter stores: another
	// limiter or other code writes the same key ("shdict abused" in
	// lua-resty-limit-traffic). The value is not interpreted.
	// errors.Is(err, ErrBadState) holds for it.
	ErrAbused error = &classError{"limiter: shdict abused", ErrBadState}
	// ErrTooManyHolders is returned by a leased Conn when MaxHolders
	// processes already hold slots of one key.
	ErrTooManyHolders = errors.New("limiter: too many lease holders")
	// ErrBadCost is returned by IncomingN and UncommitN for a cost below
	// 1, and by UncommitN for a cost above the most IncomingN admits at
	// once: no request of that cost was counted. A Conn's bound is 2^53.
	ErrBadCost = errors.New("limiter: bad cost")
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

// classError is a sentinel of a class: errors.Is finds the class in it.
type classError struct {
	msg   string
	class error
}

func (e *classError) Error() string        { return e.msg }
func (e *classError) Is(target error) bool { return target == e.class }
