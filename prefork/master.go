package prefork

// master.go: the master keeps Children children running, one per slot: a
// child that dies is replaced; SIGTERM, SIGINT or the end of Run's context
// drains every child; SIGHUP rolls the slots one at a time, starting the new
// child and waiting until it is ready before the old one is told to drain,
// and killing the old one if it still runs DrainTimeout later.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
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

	rollQueue []roll // slots still to roll
	rolling   int    // id of the new child being waited for; 0 when none
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

// run starts the children and then serves the master's loop until ctx
// ends, a signal asks to drain, or a slot fails to start too often.
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
	defer m.closeSockets()
	if err := m.begin(); err != nil {
		return err
	}
	for {
		m.startNextRoll()
		select {
		case <-ctx.Done():
			m.o.Logf("%v: draining", context.Cause(ctx))
			m.drain()
			return nil
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				m.queueRolls()
				continue
			}
			m.o.Logf("%v: draining", sig)
			m.drain()
			return nil
		case e := <-m.events:
			if err := m.handle(e); err != nil {
				m.o.Logf("%v; draining", err)
				m.drain()
				return err
			}
		}
	}
}

// begin finds the executable, opens the listening sockets and starts a
// child for every slot. On failure it drains the children it started.
func (m *master) begin() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("prefork: %w", err)
	}
	m.exe = exe
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
	return nil
}

// closeSockets closes the listening sockets of every slot.
func (m *master) closeSockets() {
	for _, f := range m.sockets {
		f.Close()
	}
}

// queueRolls queues every slot to roll, for a SIGHUP.
func (m *master) queueRolls() {
	m.rolls++
	m.o.Logf("SIGHUP: rolling children")
	for s := range m.slots {
		m.rollQueue = append(m.rollQueue, roll{slot: s, roll: m.rolls})
	}
}

// startNextRoll starts the new child of the next slot to roll, unless a
// rolled-in child is still awaited. A slot whose child fails to start is
// skipped.
func (m *master) startNextRoll() {
	for m.rolling == 0 && len(m.rollQueue) > 0 {
		r := m.rollQueue[0]
		m.rollQueue = m.rollQueue[1:]
		id, err := m.start(r.slot, r.roll)
		if err != nil {
			m.o.Logf("roll slot %d: %v", r.slot, err)
			continue
		}
		m.rolling = id
	}
}

// handle dispatches event e to the handler of its kind. It returns an
// error only when a slot failed to start too often.
func (m *master) handle(e event) error {
	switch e.kind {
	case evRespawn:
		m.onRespawn(e.slot)
		return nil
	case evRetiree:
		m.killRetiree(e.retiree)
		return nil
	}
	c := m.children[e.id]
	if c == nil {
		return nil
	}
	switch e.kind {
	case evLate:
		m.onLate(c)
	case evReady:
		m.onReady(c)
	default:
		return m.onExited(c, e.err)
	}
	return nil
}

// onRespawn replaces slot s's child once its restart delay is over,
// unless the slot has a child again.
func (m *master) onRespawn(s int) {
	if m.slots[s] == 0 {
		m.replace(s)
	}
}

// onLate kills child c, which was not ready within the ready timeout. A
// rolled-in child is given up and its slot keeps the old child. Any other
// is replaced after a delay, as it never served.
func (m *master) onLate(c *proc) {
	if c.ready {
		return
	}
	if c.id == m.rolling {
		m.o.Logf("child pid=%d not ready in %v; killing it, slot %d keeps its child", c.cmd.Process.Pid, m.o.ReadyTimeout, c.slot)
		c.retiring = true
		m.rolling = 0
	} else {
		m.o.Logf("child pid=%d not ready in %v; killing it", c.cmd.Process.Pid, m.o.ReadyTimeout)
		c.late = true
	}
	c.cmd.Process.Kill()
}

// onReady marks child c ready. A rolled-in child takes its slot, and the
// old child is told to drain.
func (m *master) onReady(c *proc) {
	c.ready = true
	m.failures[c.slot] = 0
	m.o.Logf("child pid=%d ready (slot %d)", c.cmd.Process.Pid, c.slot)
	if c.id == m.rolling {
		// The new child is ready: the old one may go.
		if old := m.children[m.slots[c.slot]]; old != nil && old != c {
			m.retire(old)
		}
		m.slots[c.slot] = c.id
		m.rolling = 0
	}
}

// onExited forgets child c, which exited with err, and replaces it unless
// it was retiring or rolling in. It returns an error wrapping
// ErrStartFailed once c's slot failed to start too often.
func (m *master) onExited(c *proc, err error) error {
	delete(m.children, c.id)
	if c.retiring {
		m.o.Logf("child pid=%d retired: %v", c.cmd.Process.Pid, exitText(err))
		return nil
	}
	if c.id == m.rolling {
		m.o.Logf("child pid=%d died: %v; slot %d keeps its child", c.cmd.Process.Pid, exitText(err), c.slot)
		m.rolling = 0
		return nil
	}
	if err := m.startFailed(c, err); err != nil {
		return err
	}
	delay := m.restartDelay(c)
	m.o.Logf("child pid=%d died: %v; replacing it in %v%s", c.cmd.Process.Pid, exitText(err), delay, m.failuresText(c))
	if delay == 0 {
		m.replace(c.slot)
		return nil
	}
	m.replaceAfter(c.slot, delay)
	return nil
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
