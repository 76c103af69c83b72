package httplimit

import "errors"

var (
	// ErrNilLimiter is returned by New for a nil limiter.
	ErrNilLimiter = errors.New("httplimit: nil limiter")
	// ErrBadProxy is returned by New for a trusted proxy prefix that is not
	// valid. ParsePrefixes returns it for a string that is no address or
	// CIDR.
	ErrBadProxy = errors.New("httplimit: bad trusted proxy")
	// ErrBadPolicy is returned by New for a policy name that is not
	// printable ASCII, or a negative limit or window.
	ErrBadPolicy = errors.New("httplimit: bad policy")
	// ErrBadIPv6Prefix is returned for a prefix length other than 64, 56 or
	// 48. AddrKeyFunc returns it, and New for Options.IPv6Prefix.
	ErrBadIPv6Prefix = errors.New("httplimit: bad IPv6 prefix")
	// ErrNoClientAddr is returned by ClientAddr when the request's
	// RemoteAddr holds no IP address, as for a Unix socket. The default key
	// function then fails the request through Options.Error.
	ErrNoClientAddr = errors.New("httplimit: no client address")
)
