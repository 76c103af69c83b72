package main

// serve_master.go: the master of "worker serve". It keeps -procs children
// running, one per slot: a child that dies is replaced; SIGTERM (or SIGINT)
// drains every child and exits 0; SIGHUP rolls the slots one at a time,
// starting the new child and waiting until it listens before the old one is
// told to drain, so that the address always has a listener. The zone lives in
// its file, so no state is lost when children come and go.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// serveUnreadyEnv, set to "1", makes a child wait for SIGTERM without
// listening or reporting ready: for testing, see -unready-roll.
const serveUnreadyEnv = "WORKER_SERVE_UNREADY"

type serveMaster struct {
	exe         string
	procs       int
	config      string
	drainTO     time.Duration // a child's drain timeout
	readyTO     time.Duration // how long a new child may take to listen
	unreadyRoll int           // testing: the roll whose children never listen; 0 none
	stdout      io.Writer
	stderr      io.Writer

	addr     string
	sockets  []*os.File // slot -> its listening socket, kept across children
	nextID   int
	children map[int]*serveProc // by id
	slots    []int              // slot -> id of the child serving it; 0 when none
	events   chan serveEvent
	rolls    int             // SIGHUPs so far
	backoff  []time.Duration // slot -> the delay before its next quick restart
}

// serveRoll is a slot to roll and the SIGHUP (1 = the first) that asked.
type serveRoll struct{ slot, roll int }

type serveProc struct {
	id, slot int
	cmd      *exec.Cmd
	started  time.Time
	ready    bool
	retiring bool // told to drain; its exit is not replaced
}

// serveEvent reports that a child listens (ready), has exited, or has not
// listened within the ready timeout (late); or, with respawn set, that
// slot's restart delay is over.
type serveEvent struct {
	id      int
	ready   bool
	late    bool
	err     error
	respawn bool
	slot    int
}

// exited reports whether e is a child's exit.
func (e serveEvent) exited() bool { return !e.ready && !e.late && !e.respawn }

// A child that dies before it listens, or within serveStableAfter of its
// start, is replaced after a delay that doubles from serveBackoffMin up to
// serveBackoffMax, so that a child that cannot start (a bad zone file, a
// full disk) is retried a few times a second at most rather than in a tight
// loop. A child that served for longer is replaced at once.
const (
	serveStableAfter = time.Second
	serveBackoffMin  = 100 * time.Millisecond
	serveBackoffMax  = 5 * time.Second
)

func (m *serveMaster) run() int {
	// Pdeathsig fires when the thread that started the child exits, not the
	// process: start every child from this one locked thread.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)

	m.children = map[int]*serveProc{}
	m.slots = make([]int, m.procs)
	m.backoff = make([]time.Duration, m.procs)
	m.events = make(chan serveEvent, 4*m.procs+4)
	if err := m.listen(); err != nil {
		fmt.Fprintln(m.stderr, "worker serve:", err)
		return 1
	}
	defer func() {
		for _, f := range m.sockets {
			f.Close()
		}
	}()
	for s := range m.slots {
		if err := m.spawn(s); err != nil {
			fmt.Fprintln(m.stderr, "worker serve:", err)
			m.drain()
			return 1
		}
	}
	fmt.Fprintf(m.stdout, "worker serve: master pid=%d, %d children\n", os.Getpid(), m.procs)

	var rollQueue []serveRoll // slots still to roll
	rolling := 0              // id of the new child being waited for; 0 when none
	for {
		if rolling == 0 && len(rollQueue) > 0 {
			r := rollQueue[0]
			rollQueue = rollQueue[1:]
			id, err := m.start(r.slot, r.roll == m.unreadyRoll)
			if err != nil {
				fmt.Fprintf(m.stderr, "worker serve: roll slot %d: %v\n", r.slot, err)
				continue
			}
			rolling = id
		}
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				m.rolls++
				fmt.Fprintln(m.stderr, "worker serve: SIGHUP: rolling children")
				for s := range m.slots {
					rollQueue = append(rollQueue, serveRoll{slot: s, roll: m.rolls})
				}
				continue
			}
			fmt.Fprintf(m.stderr, "worker serve: %v: draining\n", sig)
			m.drain()
			return 0
		case e := <-m.events:
			if e.respawn {
				if m.slots[e.slot] == 0 {
					if err := m.spawn(e.slot); err != nil {
						fmt.Fprintln(m.stderr, "worker serve:", err)
					}
				}
				continue
			}
			c := m.children[e.id]
			if c == nil {
				continue
			}
			if e.late {
				if c.ready {
					continue
				}
				// A rolled-in child is given up and its slot keeps the
				// old child; any other is killed and replaced (after a
				// delay, as it never served).
				if e.id == rolling {
					fmt.Fprintf(m.stderr, "worker serve: child pid=%d not ready in %v; killing it, slot %d keeps its child\n", c.cmd.Process.Pid, m.readyTO, c.slot)
					c.retiring = true
					rolling = 0
				} else {
					fmt.Fprintf(m.stderr, "worker serve: child pid=%d not ready in %v; killing it\n", c.cmd.Process.Pid, m.readyTO)
				}
				c.cmd.Process.Kill()
				continue
			}
			if e.ready {
				c.ready = true
				fmt.Fprintf(m.stderr, "worker serve: child pid=%d ready (slot %d)\n", c.cmd.Process.Pid, c.slot)
				if e.id == rolling {
					// The new child listens: the old one may go.
					if old := m.children[m.slots[c.slot]]; old != nil && old != c {
						old.retiring = true
						old.cmd.Process.Signal(syscall.SIGTERM)
					}
					m.slots[c.slot] = c.id
					rolling = 0
				}
				continue
			}
			delete(m.children, e.id)
			if c.retiring {
				fmt.Fprintf(m.stderr, "worker serve: child pid=%d retired: %v\n", c.cmd.Process.Pid, serveExitText(e.err))
				continue
			}
			if e.id == rolling {
				fmt.Fprintf(m.stderr, "worker serve: child pid=%d died: %v; slot %d keeps its child\n", c.cmd.Process.Pid, serveExitText(e.err), c.slot)
				rolling = 0
				continue
			}
			delay := m.restartDelay(c)
			fmt.Fprintf(m.stderr, "worker serve: child pid=%d died: %v; replacing it in %v\n", c.cmd.Process.Pid, serveExitText(e.err), delay)
			if delay == 0 {
				if err := m.spawn(c.slot); err != nil {
					fmt.Fprintln(m.stderr, "worker serve:", err)
				}
				continue
			}
			m.slots[c.slot] = 0
			slot := c.slot
			time.AfterFunc(delay, func() { m.events <- serveEvent{respawn: true, slot: slot} })
		}
	}
}

// restartDelay is how long to wait before replacing c, which died: 0 for
// a child that served for serveStableAfter, else the slot's backoff, which
// doubles for the next time.
func (m *serveMaster) restartDelay(c *serveProc) time.Duration {
	if c.ready && time.Since(c.started) >= serveStableAfter {
		m.backoff[c.slot] = 0
		return 0
	}
	d := max(m.backoff[c.slot], serveBackoffMin)
	m.backoff[c.slot] = min(2*d, serveBackoffMax)
	return d
}

// listen opens one SO_REUSEPORT socket per slot. The master keeps them and
// each child of a slot serves its slot's socket (fd 4): the kernel spreads
// connections over the sockets, and since no socket is closed while the
// master lives, connections queued on one are not reset when its child dies
// or is rolled (closing one of several SO_REUSEPORT listeners resets its
// queue unless net.ipv4.tcp_migrate_req is set); the next child takes them.
func (m *serveMaster) listen() error {
	lc := net.ListenConfig{Control: serveReusePort}
	for range m.slots {
		ln, err := lc.Listen(context.Background(), "tcp", m.addr)
		if err != nil {
			return err
		}
		f, err := ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			return err
		}
		if f, err = serveNonblockingFile(f); err != nil {
			return err
		}
		m.sockets = append(m.sockets, f)
	}
	return nil
}

// serveNonblockingFile returns a File of f's socket that leaves it
// non-blocking, and closes f. The socket's open file description is shared
// with every child of its slot, whose accept loop needs it non-blocking: in
// blocking mode an accept with nothing queued sleeps in the kernel, where
// closing the listener does not wake it, so the child cannot drain. A File
// from net (TCPListener.File) turns the description blocking whenever its
// Fd is read, as os/exec does at each child's start; one from os.NewFile
// leaves the mode as it is.
func serveNonblockingFile(f *os.File) (*os.File, error) {
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
func (m *serveMaster) spawn(s int) error {
	id, err := m.start(s, false)
	if err == nil {
		m.slots[s] = id
	}
	return err
}

// start starts a child for slot s and returns its id. The child serves the
// slot's socket at its fd 4 and writes one byte to the pipe at its fd 3 once
// it serves; its exit is reported too. An unready child (testing) does
// neither until it is killed.
func (m *serveMaster) start(s int, unready bool) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(m.exe)
	cmd.Env = append(os.Environ(), childEnv+"=serve", serveConfigEnv+"="+m.config)
	if unready {
		cmd.Env = append(cmd.Env, serveUnreadyEnv+"=1")
	}
	cmd.Stdout, cmd.Stderr = m.stdout, m.stderr
	cmd.ExtraFiles = []*os.File{w, m.sockets[s]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return 0, fmt.Errorf("start child: %w", err)
	}
	m.nextID++
	id := m.nextID
	m.children[id] = &serveProc{id: id, slot: s, cmd: cmd, started: time.Now()}
	go func() {
		var b [1]byte
		if n, _ := r.Read(b[:]); n == 1 {
			m.events <- serveEvent{id: id, ready: true}
		}
		r.Close()
	}()
	go func() { m.events <- serveEvent{id: id, err: cmd.Wait()} }()
	time.AfterFunc(m.readyTO, func() { m.events <- serveEvent{id: id, late: true} })
	return id, nil
}

// drain tells every child to drain and waits for all of them to exit; a
// child that outlives its drain timeout by far is killed.
func (m *serveMaster) drain() {
	for _, c := range m.children {
		c.retiring = true
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(m.drainTO + 5*time.Second)
	for len(m.children) > 0 {
		select {
		case e := <-m.events:
			if e.exited() {
				delete(m.children, e.id)
			}
		case <-deadline:
			for _, c := range m.children {
				c.cmd.Process.Kill()
			}
			deadline = nil
		}
	}
}

func serveExitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}
