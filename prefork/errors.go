package prefork

import "errors"

var (
	// ErrOrphan is returned by Run in a child whose master has died. The
	// master died before the child could start.
	ErrOrphan = errors.New("prefork: master gone")
	// ErrBadOptions is returned by Run for options that cannot work. An
	// example is no address, a port of 0, or a negative count or duration.
	ErrBadOptions = errors.New("prefork: bad options")
	// ErrBadChild is returned by Run in a child with a bad environment.
	// EnvChild, or the inherited files, are not what a master sets.
	ErrBadChild = errors.New("prefork: bad child environment")
	// ErrStartFailed is returned by Run when children cannot start.
	// Options.MaxStartFailures children of one slot in a row failed. Each
	// exited, or was killed, before it was ready.
	ErrStartFailed = errors.New("prefork: children cannot start")
	// ErrAddrInUse is returned by Run when another socket listens on
	// Options.Addr. Options.Takeover skips the check.
	ErrAddrInUse = errors.New("prefork: address in use")
)
