package prefork

import (
	"errors"
	"fmt"
	"time"
)

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
