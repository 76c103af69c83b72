package shmfasthttp

import "errors"

var (
	// ErrNilLimiter is returned by New for a nil limiter.
	ErrNilLimiter = errors.New("shmfasthttp: nil limiter")
	// ErrBadProxy is returned by New for a trusted proxy prefix that is not
	// valid.
	ErrBadProxy = errors.New("shmfasthttp: bad trusted proxy")
	// ErrBadPolicy is returned by New for a policy name that is not
	// printable ASCII, or a negative limit or window.
	ErrBadPolicy = errors.New("shmfasthttp: bad policy")
	// ErrBadIPv6Prefix is returned by New, wrapping
	// httplimit.ErrBadIPv6Prefix, for an IPv6Prefix other than 64, 56 or
	// 48.
	ErrBadIPv6Prefix = errors.New("shmfasthttp: bad IPv6 prefix")
	// ErrNoClientAddr is returned by ClientAddr when the connection's
	// remote address holds no IP address (a Unix socket, for one); the
	// default key function then fails the request through Options.Error.
	ErrNoClientAddr = errors.New("shmfasthttp: no client address")
)
