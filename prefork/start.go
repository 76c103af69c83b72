package prefork

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spawn starts a child that serves slot s at once.
func (m *master) spawn(s, roll int) error {
	id, err := m.start(s, roll)
	if err == nil {
		m.slots[s] = id
	}
	return err
}

// start starts a child for slot s, for the SIGHUP roll (0 for none), and
// returns its id. The child serves the slot's socket at its fd 4 and writes
// one byte to the pipe at its fd 3 once it accepts; its exit is reported
// too. The files of Options.ExtraFiles follow from ExtraFD.
func (m *master) start(s, roll int) (int, error) {
	var extra []*os.File
	if m.o.ExtraFiles != nil {
		var err error
		if extra, err = m.o.ExtraFiles(s, roll); err != nil {
			return 0, fmt.Errorf("extra files: %w", err)
		}
	}
	defer func() {
		for _, f := range extra {
			f.Close()
		}
	}()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(m.exe, m.o.Args...)
	cmd.Env = append(os.Environ(), EnvChild+"="+strconv.Itoa(os.Getpid()))
	if m.o.Env != nil {
		cmd.Env = append(cmd.Env, m.o.Env(s, roll)...)
	}
	cmd.Stdout, cmd.Stderr = m.o.Stdout, m.o.Stderr
	cmd.ExtraFiles = append([]*os.File{w, m.sockets[s]}, extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return 0, fmt.Errorf("start child: %w", err)
	}
	m.nextID++
	id := m.nextID
	m.children[id] = &proc{id: id, slot: s, cmd: cmd, started: time.Now()}
	// A child's ready report reaches run before its exit, so that a child
	// that was ready and died at once is not taken for one that failed to
	// start. Once the child has exited, the read of its pipe is cut short:
	// a program the child started may hold the pipe open.
	read := make(chan struct{})
	go func() {
		defer close(read)
		if readyByte(r) {
			m.send(event{kind: evReady, id: id})
		}
	}()
	go func() {
		err := cmd.Wait()
		r.SetReadDeadline(time.Now())
		<-read
		r.Close()
		m.send(event{kind: evExited, id: id, err: err})
	}()
	time.AfterFunc(m.o.ReadyTimeout, func() { m.send(event{kind: evLate, id: id}) })
	return id, nil
}

// readyByte reads the ready pipe r and reports whether the child wrote its
// byte. A read cut short by r's deadline looks once more, without waiting:
// the byte may have come just before.
func readyByte(r *os.File) bool {
	var b [1]byte
	n, err := r.Read(b[:])
	if n == 1 {
		return true
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	rc.Control(func(fd uintptr) { n, _ = unix.Read(int(fd), b[:]) })
	return n == 1
}
