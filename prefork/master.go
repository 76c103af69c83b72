package prefork

// master.go: the master keeps Children children running, one per slot: a
// child that dies is replaced; SIGTERM, SIGINT or the end of Run's context
// drains every child; SIGHUP rolls the slots one at a time, starting the new
// child and waiting until it is ready before the old one is told to drain,
// and killing the old one if it still runs DrainTimeout later.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type master struct {
	o   Options
	exe string

	sockets  []*os.File // slot -> its listening socket, kept across children
	nextID   int
	children map[int]*proc // by id
	slots    []int         // slot -> id of the child serving it; 0 when none
	events   chan event
	done     chan struct{}   // closed when run returns: no more events
	rolls    int             // SIGHUPs so far
	backoff  []time.Duration // slot -> the delay before its next quick restart
	failures []int           // slot -> its children that failed to start, in a row
}

// roll is a slot to roll and the SIGHUP (1 = the first) that asked.
type roll struct{ slot, roll int }

type proc struct {
	id, slot int
	cmd      *exec.Cmd
	started  time.Time
	ready    bool
	retiring bool // told to drain; its exit is not replaced
	late     bool // killed for not being ready within ReadyTimeout
}

// eventKind is what an event reports.
type eventKind int

const (
	evExited  eventKind = iota // child id exited with err
	evReady                    // child id is ready
	evLate                     // child id was not ready within the ready timeout
	evRespawn                  // slot's restart delay is over
	evRetiree                  // DrainTimeout passed since a roll told retiree to drain
)

// event is one thing the master's loop learns, of the kind kind.
type event struct {
	kind    eventKind
	id      int
	err     error
	slot    int
	retiree *proc
}

func newMaster(o Options) *master {
	return &master{
		o:        o,
		children: map[int]*proc{},
		slots:    make([]int, o.Children),
		backoff:  make([]time.Duration, o.Children),
		failures: make([]int, o.Children),
		events:   make(chan event, 4*o.Children+4),
		done:     make(chan struct{}),
	}
}

func (m *master) run(ctx context.Context) error {
	// The parent-death signal fires when the thread that started the
	// child exits, not the process: start every child from this one
	// locked thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	defer close(m.done)

	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("prefork: %w", err)
	}
	m.exe = exe
	defer func() {
		for _, f := range m.sockets {
			f.Close()
		}
	}()
	if !m.o.Takeover {
		if err := probe(m.o.Addr); err != nil {
			return err
		}
	}
	if err := m.listen(); err != nil {
		return fmt.Errorf("prefork: %w", err)
	}
	for s := range m.slots {
		if err := m.spawn(s, 0); err != nil {
			m.drain()
			return fmt.Errorf("prefork: %w", err)
		}
	}

	var rollQueue []roll // slots still to roll
	rolling := 0         // id of the new child being waited for; 0 when none
	for {
		if rolling == 0 && len(rollQueue) > 0 {
			r := rollQueue[0]
			rollQueue = rollQueue[1:]
			id, err := m.start(r.slot, r.roll)
			if err != nil {
				m.o.Logf("roll slot %d: %v", r.slot, err)
				continue
			}
			rolling = id
		}
		select {
		case <-ctx.Done():
			m.o.Logf("%v: draining", context.Cause(ctx))
			m.drain()
			return nil
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				m.rolls++
				m.o.Logf("SIGHUP: rolling children")
				for s := range m.slots {
					rollQueue = append(rollQueue, roll{slot: s, roll: m.rolls})
				}
				continue
			}
			m.o.Logf("%v: draining", sig)
			m.drain()
			return nil
		case e := <-m.events:
			switch e.kind {
			case evRespawn:
				if m.slots[e.slot] == 0 {
					m.replace(e.slot)
				}
				continue
			case evRetiree:
				m.killRetiree(e.retiree)
				continue
			}
			c := m.children[e.id]
			if c == nil {
				continue
			}
			if e.kind == evLate {
				if c.ready {
					continue
				}
				// A rolled-in child is given up and its slot keeps the
				// old child; any other is killed and replaced (after a
				// delay, as it never served).
				if e.id == rolling {
					m.o.Logf("child pid=%d not ready in %v; killing it, slot %d keeps its child", c.cmd.Process.Pid, m.o.ReadyTimeout, c.slot)
					c.retiring = true
					rolling = 0
				} else {
					m.o.Logf("child pid=%d not ready in %v; killing it", c.cmd.Process.Pid, m.o.ReadyTimeout)
					c.late = true
				}
				c.cmd.Process.Kill()
				continue
			}
			if e.kind == evReady {
				c.ready = true
				m.failures[c.slot] = 0
				m.o.Logf("child pid=%d ready (slot %d)", c.cmd.Process.Pid, c.slot)
				if e.id == rolling {
					// The new child is ready: the old one may go.
					if old := m.children[m.slots[c.slot]]; old != nil && old != c {
						m.retire(old)
					}
					m.slots[c.slot] = c.id
					rolling = 0
				}
				continue
			}
			delete(m.children, e.id)
			if c.retiring {
				m.o.Logf("child pid=%d retired: %v", c.cmd.Process.Pid, exitText(e.err))
				continue
			}
			if e.id == rolling {
				m.o.Logf("child pid=%d died: %v; slot %d keeps its child", c.cmd.Process.Pid, exitText(e.err), c.slot)
				rolling = 0
				continue
			}
			if err := m.startFailed(c, e.err); err != nil {
				m.o.Logf("%v; draining", err)
				m.drain()
				return err
			}
			delay := m.restartDelay(c)
			m.o.Logf("child pid=%d died: %v; replacing it in %v%s", c.cmd.Process.Pid, exitText(e.err), delay, m.failuresText(c))
			if delay == 0 {
				m.replace(c.slot)
				continue
			}
			m.replaceAfter(c.slot, delay)
		}
	}
}

// startFailed counts c's death, for the exit err, as a failure to start if
// c was never ready. It returns an error wrapping ErrStartFailed once c's
// slot has had MaxStartFailures such failures in a row, else nil.
func (m *master) startFailed(c *proc, err error) error {
	if c.ready {
		return nil
	}
	m.failures[c.slot]++
	if m.failures[c.slot] < m.o.MaxStartFailures {
		return nil
	}
	late := ""
	if c.late {
		late = fmt.Sprintf(", not ready in %v", m.o.ReadyTimeout)
	}
	if err == nil {
		err = errors.New(exitText(nil))
	}
	return fmt.Errorf("%w: slot %d: %d children in a row exited before they were ready; the last, pid=%d%s: %w",
		ErrStartFailed, c.slot, m.failures[c.slot], c.cmd.Process.Pid, late, err)
}

// failuresText is the note on c's death in the master's report: how many
// of its slot's children in a row failed to start, if c was one of them.
func (m *master) failuresText(c *proc) string {
	if c.ready {
		return ""
	}
	return fmt.Sprintf(" (%d of %d failed starts)", m.failures[c.slot], m.o.MaxStartFailures)
}

// retire tells c, the old child of a rolled slot, to drain, and asks run to
// kill it if it still runs after DrainTimeout: a child wedged in a request,
// or that ignores the end of its context, would otherwise serve on until
// the master exits.
func (m *master) retire(c *proc) {
	c.retiring = true
	c.cmd.Process.Signal(syscall.SIGTERM)
	time.AfterFunc(m.o.DrainTimeout, func() { m.send(event{kind: evRetiree, retiree: c}) })
}

// killRetiree kills c, told to drain by a roll DrainTimeout ago, if it
// still runs, and reports whether it did. c still runs if it is still one
// of the children (its exit not yet reported): c itself is looked for, not
// its pid, which once c has exited may be another process's.
func (m *master) killRetiree(c *proc) bool {
	if m.children[c.id] != c {
		return false
	}
	m.o.Logf("child pid=%d still draining after %v; killing it", c.cmd.Process.Pid, m.o.DrainTimeout)
	c.cmd.Process.Kill()
	return true
}

// replace starts a child to serve slot s, which has none: its child died.
// When the child cannot be started (fork or exec failing for a while:
// EAGAIN, EMFILE, ENOMEM), the slot is left empty and tried again after its
// backoff, as for a child that died young: the slot's socket stays open and
// keeps receiving connections, which wait for the slot's next child.
func (m *master) replace(s int) {
	err := m.spawn(s, 0)
	if err == nil {
		return
	}
	d := m.nextBackoff(s)
	m.o.Logf("slot %d: %v; trying again in %v", s, err, d)
	m.replaceAfter(s, d)
}

// replaceAfter empties slot s and asks run, after d, to replace its child
// if the slot is still empty then (a roll may have filled it).
func (m *master) replaceAfter(s int, d time.Duration) {
	m.slots[s] = 0
	time.AfterFunc(d, func() { m.send(event{kind: evRespawn, slot: s}) })
}

// restartDelay is how long to wait before replacing c, which died: 0 for a
// child that served for StableAfter, else the slot's backoff.
func (m *master) restartDelay(c *proc) time.Duration {
	if c.ready && time.Since(c.started) >= m.o.StableAfter {
		m.backoff[c.slot] = 0
		return 0
	}
	return m.nextBackoff(c.slot)
}

// nextBackoff returns slot s's backoff, at least BackoffMin, and doubles it,
// up to BackoffMax, for the next time. It is reset by the death of a child
// that served for StableAfter.
func (m *master) nextBackoff(s int) time.Duration {
	d := max(m.backoff[s], m.o.BackoffMin)
	m.backoff[s] = min(2*d, m.o.BackoffMax)
	return d
}

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

// send reports e to run, unless run has returned.
func (m *master) send(e event) {
	select {
	case m.events <- e:
	case <-m.done:
	}
}

// drain tells every child to drain and waits for all of them to exit; a
// child still running after DrainTimeout is killed.
func (m *master) drain() {
	for _, c := range m.children {
		c.retiring = true
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(m.o.DrainTimeout)
	for len(m.children) > 0 {
		select {
		case e := <-m.events:
			if c := m.children[e.id]; c != nil && e.kind == evExited {
				m.o.Logf("child pid=%d retired: %v", c.cmd.Process.Pid, exitText(e.err))
				delete(m.children, e.id)
			}
		case <-deadline:
			for _, c := range m.children {
				m.o.Logf("child pid=%d still draining after %v; killing it", c.cmd.Process.Pid, m.o.DrainTimeout)
				c.cmd.Process.Kill()
			}
			deadline = nil
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}
