package prefork

// child.go: a child serves the socket its master opened for its slot (fd 4)
// and tells the master it is ready, by a byte on the pipe at fd 3, when it
// first accepts.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

// The files a master hands each child, after stdin, stdout and stderr.
const (
	readyFD  = 3
	socketFD = 4
)

// ExtraFD is the descriptor of a child's first file from
// Options.ExtraFiles. The next ones follow it in order.
const ExtraFD = socketFD + 1

// runChild is Run in a child.
func runChild(ctx context.Context, child func(ctx context.Context, ln net.Listener) error) error {
	ppid, err := strconv.Atoi(masterPid)
	if err != nil || ppid <= 0 {
		return fmt.Errorf("%w: %s=%q", ErrBadChild, EnvChild, masterPid)
	}
	if child == nil {
		return fmt.Errorf("%w: no child function", ErrBadOptions)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP is the master's signal (roll); one that reaches a child too
	// (pkill -HUP by name, kill -HUP -PGID, a terminal's hang-up) would
	// kill it with its requests in flight. Catch it and drop it: unlike
	// signal.Ignore, a handler is not inherited by the programs the child
	// execs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The master may have died before the parent-death signal was set:
	// the child then has a new parent.
	if os.Getppid() != ppid {
		return fmt.Errorf("%w: pid %d", ErrOrphan, ppid)
	}
	ln := &listener{file: os.NewFile(socketFD, "listener"), ready: os.NewFile(readyFD, "ready")}
	if ln.file == nil || ln.ready == nil {
		return fmt.Errorf("%w: no fd %d and %d", ErrBadChild, readyFD, socketFD)
	}
	defer ln.Close()
	return child(ctx, ln)
}

// listener is a child's socket, opened as a net.Listener at its first use
// (Accept or Addr), when it also reports the child ready. Until then the
// child leaves the socket alone: its open file description is shared with
// the master and the slot's other children.
type listener struct {
	file  *os.File // the socket from the master
	ready *os.File // the pipe to the master

	once sync.Once
	ln   net.Listener
	err  error

	closeOnce sync.Once
	closeErr  error
}

// open makes the net.Listener, once, and reports the child ready.
func (l *listener) open() error {
	l.once.Do(func() {
		l.ln, l.err = net.FileListener(l.file)
		l.file.Close() // the listener holds its own descriptor
		if l.err != nil {
			l.err = fmt.Errorf("%w: fd %d: %v", ErrBadChild, socketFD, l.err)
			return
		}
		l.ready.Write([]byte{1})
		l.ready.Close()
	})
	return l.err
}

// Accept waits for and returns the next connection. The first call
// reports the child ready.
func (l *listener) Accept() (net.Conn, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	return l.ln.Accept()
}

// Close closes the listener. The socket stays open in the master. What is
// queued on it waits for the slot's next child.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.once.Do(func() { l.err = net.ErrClosed }) // never opened: open no more
		if l.ln != nil {
			l.closeErr = l.ln.Close()
			return
		}
		l.file.Close()
		l.ready.Close()
	})
	return l.closeErr
}

// Addr returns the listener's address; it reports the child ready, as
// Accept does.
func (l *listener) Addr() net.Addr {
	if l.open() != nil {
		return &net.TCPAddr{}
	}
	return l.ln.Addr()
}
