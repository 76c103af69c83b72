package prefork

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"time"
)

// EnvChild is the environment variable the master sets in each child it
// starts. Its value is the master's process id. Run and IsChild read it.
// The package removes it from the environment when the program starts. So
// the programs a child starts do not inherit it.
const EnvChild = "PREFORK_CHILD"

// The defaults of Options' zero fields.
const (
	DefaultReadyTimeout = 10 * time.Second
	DefaultDrainTimeout = 15 * time.Second
	DefaultStableAfter  = time.Second
	DefaultBackoffMin   = 100 * time.Millisecond
	DefaultBackoffMax   = 5 * time.Second

	DefaultMaxStartFailures = 5
)

// Options configures the master. A child reads none of them. It gets its
// socket from the master, whatever Options it is given.
type Options struct {
	// Addr is the TCP address every child listens on, as for net.Listen
	// ("127.0.0.1:8080", ":8080", ":http"). A port of 0, however written
	// (":0", ":00", ":+0"), is refused with ErrBadOptions, as is one that
	// net.LookupPort rejects: each socket would get its own port.
	Addr string
	// Children is how many children serve at once; 0 means
	// runtime.NumCPU().
	Children int
	// ReadyTimeout is how long a new child may take to accept; one that
	// takes longer is killed (and replaced, but in a roll the slot keeps
	// its old child). 0 means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// DrainTimeout is how long the master waits, once it told a child to
	// drain (every child on SIGTERM, SIGINT or the end of Run's context;
	// a rolled slot's old child on SIGHUP), before it kills the child if
	// it still runs. It should exceed the children's own drain time. 0
	// means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// StableAfter is how long a ready child must have run for its death
	// to be replaced at once; a child that dies sooner, or before it is
	// ready, is replaced after a delay of BackoffMin, doubling at each
	// such death of its slot up to BackoffMax. A replacement that cannot
	// be started (fork or exec failing) is tried again after that delay,
	// which doubles as for a death. Zero fields mean DefaultStableAfter,
	// DefaultBackoffMin and DefaultBackoffMax.
	StableAfter, BackoffMin, BackoffMax time.Duration
	// MaxStartFailures is how many children of one slot in a row may fail
	// to start before Run gives up. A child fails to start when it exits
	// before it is ready, or is killed for not being ready in
	// ReadyTimeout. A child that becomes ready resets its slot's count.
	// When a slot reaches the limit, Run drains every child, closes its
	// sockets and returns an error wrapping ErrStartFailed. A new child
	// started by a roll is not counted: the slot keeps its old child. 0
	// means DefaultMaxStartFailures.
	MaxStartFailures int
	// Takeover lets Run listen on an address that another listening
	// socket holds with SO_REUSEPORT, such as an old master's during an
	// upgrade. The two masters then share the connections until the old
	// one exits. Without Takeover, Run refuses such an address with
	// ErrAddrInUse. A socket bound without SO_REUSEPORT is refused either
	// way.
	Takeover bool
	// Args are a child's arguments, without the program name; nil means
	// the master's own (os.Args[1:]).
	Args []string
	// Env, when set, returns the environment a child adds to the
	// master's: slot is the child's slot (0 to Children-1), roll the
	// SIGHUP that started it (1 for the first), or 0 for a child that
	// was not started by a roll.
	Env func(slot, roll int) []string
	// ExtraFiles, when set, returns files a child inherits after its
	// socket: the first at ExtraFD in the child, the next at ExtraFD+1,
	// and so on. slot and roll are as for Env. It is called for every
	// child, replacements and rolls included, so it may hand each child
	// a fresh pipe. The master closes the files once the child has
	// started or failed to start. An error fails that start, which is
	// retried as a failed fork is.
	ExtraFiles func(slot, roll int) ([]*os.File, error)
	// Stdout and Stderr are the children's; nil means the master's
	// os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Logf, when set, receives the master's reports: a child ready, dead,
	// replaced, retired, a roll, a drain. Each is one line without its
	// newline, and names the child by "child pid=N". Nil discards them.
	Logf func(format string, args ...any)
}

// IsChild reports whether this process is a child started by a prefork
// master. A program may then skip, in its children, what only the master
// does. Examples are creating a zone file and checking its configuration.
func IsChild() bool { return masterPid != "" }

// masterPid is the value of EnvChild this process started with. The
// variable is removed from the environment at once, so that a program a
// child runs is not taken for a child in its turn.
var masterPid = func() string {
	v := os.Getenv(EnvChild)
	os.Unsetenv(EnvChild)
	return v
}()

// Run runs the master, or, in a child it started (IsChild), the child.
//
// In the master, Run opens the sockets and starts o.Children children. It
// keeps them running until SIGTERM or SIGINT arrives or ctx ends. Then it
// drains them and returns nil.
//
// Errors: Run returns ErrBadOptions for bad Options. It returns
// ErrAddrInUse when another socket listens on o.Addr and o.Takeover is
// false. It returns ErrStartFailed when a slot's children fail to start
// too often. It returns other errors when it cannot listen on o.Addr. It
// does too when it cannot start the first children. Before any error, it stops
// every child it started and closes its sockets.
//
// In a child, Run calls child with the child's listener and a context. The
// context ends on SIGTERM or SIGINT. The master sends one to drain the
// child, or the kernel when the master dies. Run returns what child
// returns. SIGHUP, meant for the master, is ignored while child runs.
//
// child should serve ln until the context ends. It should then finish its
// requests in flight. Serve does both for an http.Server, ServeFunc for
// any server. The child is ready for the master when it first calls ln's
// Accept or Addr. One that never does is killed after o.ReadyTimeout.
//
// Run returns ErrOrphan, without calling child, when the master died
// before the child started. Some masters' children take another path to
// Run, chosen by Options.Args or Env. Such a master may pass a nil child.
func Run(ctx context.Context, o Options, child func(ctx context.Context, ln net.Listener) error) error {
	if IsChild() {
		return runChild(ctx, child)
	}
	if err := o.check(); err != nil {
		return err
	}
	return newMaster(o.withDefaults()).run(ctx)
}

func (o Options) check() error {
	if o.Addr == "" {
		return fmt.Errorf("%w: no address", ErrBadOptions)
	}
	if o.Children < 0 || o.MaxStartFailures < 0 || o.ReadyTimeout < 0 || o.DrainTimeout < 0 || o.StableAfter < 0 || o.BackoffMin < 0 || o.BackoffMax < 0 {
		return fmt.Errorf("%w: negative count or duration: %+v", ErrBadOptions, o)
	}
	_, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("%w: address %q: %v", ErrBadOptions, o.Addr, err)
	}
	// Port 0 has many spellings ("00", "+0", "-0"), and net.Listen reads
	// them all as 0: ask net what the port is, as Listen will.
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return fmt.Errorf("%w: address %q: %v", ErrBadOptions, o.Addr, err)
	}
	if p == 0 {
		return fmt.Errorf("%w: address %q has no fixed port", ErrBadOptions, o.Addr)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Children == 0 {
		o.Children = runtime.NumCPU()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ReadyTimeout, DefaultReadyTimeout)
	def(&o.DrainTimeout, DefaultDrainTimeout)
	def(&o.StableAfter, DefaultStableAfter)
	def(&o.BackoffMin, DefaultBackoffMin)
	def(&o.BackoffMax, DefaultBackoffMax)
	o.BackoffMax = max(o.BackoffMax, o.BackoffMin)
	if o.MaxStartFailures == 0 {
		o.MaxStartFailures = DefaultMaxStartFailures
	}
	if o.Args == nil {
		o.Args = os.Args[1:]
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}
