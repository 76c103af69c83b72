package counter

import "errors"

var (
	// ErrClosed is returned by Sync, Get, Reset and Keys once the Counter
	// is closed.
	ErrClosed = errors.New("counter: closed")
	// ErrBadInterval is returned by New for a negative sync interval.
	ErrBadInterval = errors.New("counter: negative sync interval")
	// ErrNilDict is returned by New without a dictionary.
	ErrNilDict = errors.New("counter: nil dict")
)
