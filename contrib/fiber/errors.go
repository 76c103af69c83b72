package shmfiber

import "errors"

var (
	// ErrNilDict is returned by NewStorage for a nil dictionary.
	ErrNilDict = errors.New("shmfiber: nil dict")
	// ErrBadPrefix is returned by NewStorage for a prefix that leaves no
	// room for a key.
	ErrBadPrefix = errors.New("shmfiber: prefix too long")
	// ErrClosed is returned by a Storage's methods after Close.
	ErrClosed = errors.New("shmfiber: storage closed")
	// ErrNilLimiter is returned by New for a nil limiter.
	ErrNilLimiter = errors.New("shmfiber: nil limiter")
	// ErrBadPolicy is returned by New for a policy name that is not
	// printable ASCII, or a negative limit or window.
	ErrBadPolicy = errors.New("shmfiber: bad policy")
	// ErrBadIPv6Prefix is returned by New, wrapping
	// httplimit.ErrBadIPv6Prefix, for an IPv6Prefix other than 64, 56 or
	// 48.
	ErrBadIPv6Prefix = errors.New("shmfiber: bad IPv6 prefix")
	// ErrNoClientAddr is returned by ClientAddr, and by the default key
	// function through Options.Error, when the peer's address is no IP
	// address.
	ErrNoClientAddr = errors.New("shmfiber: no client address")
)
