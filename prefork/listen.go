package prefork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// listen opens one SO_REUSEPORT socket per slot. The master keeps them and
// each child of a slot serves its slot's socket (fd 4): the kernel spreads
// connections over the sockets, and since no socket is closed while the
// master lives, connections queued on one are not reset when its child
// dies or is rolled (closing one of several SO_REUSEPORT listeners resets
// its queue unless net.ipv4.tcp_migrate_req is set); the next child takes
// them.
func (m *master) listen() error {
	lc := net.ListenConfig{Control: reusePort}
	for range m.slots {
		ln, err := lc.Listen(context.Background(), "tcp", m.o.Addr)
		if err != nil {
			return err
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			return err
		}
		if f, err = nonblockingFile(f); err != nil {
			return err
		}
		m.sockets = append(m.sockets, f)
	}
	return nil
}

// reusePort sets SO_REUSEPORT so that every socket binds the same address.
func reusePort(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	return errors.Join(err, serr)
}

// nonblockingFile returns a File of f's socket that leaves it non-blocking,
// and closes f. The socket's open file description is shared with every
// child of its slot, whose accept loop needs it non-blocking: in blocking
// mode an accept with nothing queued sleeps in the kernel, where closing
// the listener does not wake it, so the child cannot drain. A File from net
// (TCPListener.File) turns the description blocking whenever its Fd is
// read, as os/exec does at each child's start; one from os.NewFile leaves
// the mode as it is.
func nonblockingFile(f *os.File) (*os.File, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup listener: %w", derr)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
