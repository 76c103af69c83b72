package shmprom

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
)

// Host-wide decision counts.
//
// Each process of a prefork fleet has a Collector of its own, and a scrape
// of the shared port reaches one of them at random. With CountHostIn, each
// Collector also counts its limiters' decisions into a zone that every
// process opens, through a counter.Counter: an add in process memory per
// decision, and one write per limiter and decision each interval. Every
// process then exports the same host totals.

var descProcessDecisions = prometheus.NewDesc("shmzone_limiter_process_decisions_total",
	"Decisions of this process's limiter, by decision: allowed, rejected or error. Exported with CountHostIn, where shmzone_limiter_decisions_total holds the host's.",
	[]string{"limiter", "decision", "pid"}, nil)

// hostCounts is what a Collector keeps for CountHostIn.
type hostCounts struct {
	c   *counter.Counter
	pid string
}

// hostHandles are a Limiter's counts in the zone, one per decision.
type hostHandles struct {
	allowed, rejected, errors *counter.Handle
}

// hostKey returns the zone key of limiter name's count of decision.
func hostKey(name, decision string) string {
	return "shmprom:decisions:" + decision + ":" + name
}

// CountHostIn counts the decisions of the Collector's limiters in d as
// well, from now on, and syncs them to d every interval. Every process of a
// fleet that opens d, and calls CountHostIn with it, then adds to the same
// counts. A scrape exports them as shmzone_limiter_decisions_total, the
// host's totals, and this process's own counts as
// shmzone_limiter_process_decisions_total, with a pid label.
//
// A scrape syncs this process's counts first. The other processes' counts
// are behind by at most their interval. The counts live in d as dict
// numbers under keys that begin with "shmprom:decisions:". They last as
// long as the zone: a restarted fleet counts on from them. A zone that
// evicts may lose them, which Prometheus reads as a counter reset.
//
// Call Close when done: it syncs the last counts. Errors: ErrNilDict,
// ErrBadInterval for an interval that is not positive, ErrHostCounts when
// the Collector counts in a zone already, and ErrKeyTooLong when a
// limiter's name makes a key longer than dict.MaxKeyLen.
func (c *Collector) CountHostIn(d *dict.Dict, interval time.Duration) error {
	if d == nil {
		return ErrNilDict
	}
	if interval <= 0 {
		return fmt.Errorf("%w: %v", ErrBadInterval, interval)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host != nil {
		return ErrHostCounts
	}
	for _, l := range c.limiters {
		if err := checkHostName(l.name); err != nil {
			return err
		}
	}
	ctr, err := counter.New(d, interval)
	if err != nil {
		return err
	}
	c.host = &hostCounts{c: ctr, pid: strconv.Itoa(os.Getpid())}
	for _, l := range c.limiters {
		l.host.Store(c.host.handles(l.name))
	}
	return nil
}

// checkHostName reports a limiter name whose zone keys would be too long.
func checkHostName(name string) error {
	if k := hostKey(name, "rejected"); len(k) > dict.MaxKeyLen {
		return fmt.Errorf("%w: limiter %q makes the key %q of %d bytes, over %d", ErrKeyTooLong, name, k, len(k), dict.MaxKeyLen)
	}
	return nil
}

// handles returns the counts in the zone of limiter name.
func (h *hostCounts) handles(name string) *hostHandles {
	return &hostHandles{
		allowed:  h.c.Key(hostKey(name, "allowed")),
		rejected: h.c.Key(hostKey(name, "rejected")),
		errors:   h.c.Key(hostKey(name, "error")),
	}
}

// metrics appends the host's counts of l and this process's, labelled
// with its pid. The caller synced h.c.
func (h *hostCounts) metrics(ms []prometheus.Metric, l *Limiter) []prometheus.Metric {
	for _, x := range []struct {
		decision string
		own      uint64
	}{
		{"allowed", l.allowed.Load()},
		{"rejected", l.rejected.Load()},
		{"error", l.errors.Load()},
	} {
		ms = append(ms, prometheus.MustNewConstMetric(descProcessDecisions, prometheus.CounterValue, float64(x.own), l.name, x.decision, h.pid))
		n, err := h.c.Get(hostKey(l.name, x.decision))
		if err != nil {
			continue // none counted yet, or the zone is gone: no series
		}
		ms = append(ms, prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(n), l.name, x.decision))
	}
	return ms
}

// Close syncs the counts CountHostIn keeps, and stops their syncs. It
// returns the last sync's error. A Collector without CountHostIn has
// nothing to close. Close the Collector before the Dict it counts in.
func (c *Collector) Close() error {
	c.mu.Lock()
	h := c.host
	c.mu.Unlock()
	if h == nil {
		return nil
	}
	return h.c.Close()
}
