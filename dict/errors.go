package dict

import (
	"errors"
	"fmt"

	"github.com/shmzone/shmzone/shm"
)

var (
	// ErrNotFound is returned when a key is absent or expired.
	ErrNotFound = errors.New("dict: not found")
	// ErrExists is returned by Add and SafeAdd when the key holds a live value.
	ErrExists = errors.New("dict: exists")
	// ErrNoMemory is returned when a write does not fit, after expired entries
	// were reclaimed and, where allowed, live ones evicted. The old value of
	// the key is left as it was.
	ErrNoMemory = errors.New("dict: no memory")
	// ErrNotNumber is returned by the Incr family on a value that is not an
	// int or a float, and, wrapped, by Incr and IncrInit on a float whose
	// sum no int64 holds.
	ErrNotNumber = errors.New("dict: not a number")
	// ErrNotList is returned by list operations on a key that holds a value.
	ErrNotList = errors.New("dict: value is not a list")
	// ErrIsList is returned by value operations on a key that holds a list.
	ErrIsList = errors.New("dict: value is a list")
	// ErrEmptyKey is returned for the empty key.
	ErrEmptyKey = errors.New("dict: empty key")
	// ErrKeyTooLong is returned for a key longer than MaxKeyLen bytes.
	ErrKeyTooLong = errors.New("dict: key too long")
	// ErrValueTooLarge is returned for a value that no shard of the zone could
	// ever hold, even empty.
	ErrValueTooLarge = errors.New("dict: value too large")
	// ErrBadTTL is returned for a negative TTL.
	ErrBadTTL = errors.New("dict: negative ttl")
	// ErrClosed is returned when a closed Dict is used.
	ErrClosed = errors.New("dict: closed")
	// ErrReadOnly is returned by writes to a Dict opened read-only.
	ErrReadOnly = errors.New("dict: read-only")
	// ErrCorrupt is returned when the zone's contents are inconsistent. It is
	// shm.ErrCorrupt, so one errors.Is check covers the header and the data.
	ErrCorrupt = shm.ErrCorrupt
	// ErrLockTimeout is returned when an operation waited Options.LockTimeout
	// for a shard's lock that a live process kept: one stopped, or stuck in
	// the function it gave Update. The operation changed nothing and may be
	// retried. It is shm.ErrLockTimeout.
	ErrLockTimeout = shm.ErrLockTimeout
)

// ErrSizeMismatch is returned by Open when Options.Size is not 0 and the
// zone exists with another size. Its message names both sizes and the
// shmctl commands that resize the zone.
var ErrSizeMismatch = errors.New("dict: zone size differs")

// ErrBadValue is returned when the zero Value, which has no kind, is stored.
var ErrBadValue = errors.New("dict: value has no kind")

// ErrWrongShape is returned by Mutate when the live value is not a bytes
// value of the size asked for.
var ErrWrongShape = errors.New("dict: value of another kind or size")

// errBeyondInt is the error of Incr and IncrInit on a float whose sum f no
// int64 holds: ErrNotNumber, as the sum is no int. It is a function of its
// own, so that the increment's path holds no fmt call.
func errBeyondInt(f float64) error {
	return fmt.Errorf("%w: float sum %g beyond int64; use IncrFloat", ErrNotNumber, f)
}
