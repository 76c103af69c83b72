package shmprom

import (
	"fmt"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonemetrics"
	"github.com/shmzone/shmzone/limiter"
)

// The metrics: the dictionary's are internal/zonemetrics', with a zone
// label, in its order; the limiters' carry a limiter label. The names are
// those of `worker serve`'s /metrics.
var dictDescs = func() []*prometheus.Desc {
	ds := make([]*prometheus.Desc, len(zonemetrics.All))
	for i, m := range zonemetrics.All {
		ds[i] = prometheus.NewDesc(m.Name, m.Help, []string{"zone"}, nil)
	}
	return ds
}()

var (
	descDecisions = prometheus.NewDesc("shmzone_limiter_decisions_total",
		"Decisions of the limiter, by decision: allowed, rejected or error. This process's, or with CountHostIn the host's.", []string{"limiter", "decision"}, nil)
	descDryRun = prometheus.NewDesc("shmzone_limiter_dryrun_rejected_total",
		"Requests a dry run let through that the limiter rejected, in every process of the zone. Read from the zone at each scrape.", []string{"limiter"}, nil)
	descForcible = prometheus.NewDesc("shmzone_limiter_forcible_total",
		"Operations of this process's limiter whose write evicted other entries (limiter.Stats.Forcible).", []string{"limiter"}, nil)
	descRetries = prometheus.NewDesc("shmzone_limiter_retries_total",
		"Writes of this process's limiter tried again because the key's shard was full (limiter.Stats.Retries).", []string{"limiter"}, nil)
	descEvicted = prometheus.NewDesc("shmzone_limiter_evicted_total",
		"Decisions of this process's limiter that found their key's state lost to eviction (limiter.Stats.Evicted).", []string{"limiter"}, nil)
)

// statser is a limiter that counts its full-zone writes, as the limiters of
// package limiter do.
type statser interface {
	Stats() limiter.Stats
}

// Collector is a prometheus.Collector of dictionaries and limiters. The
// zero value is not usable: call NewCollector. Register it once with a
// registry; dictionaries and limiters may be added and removed before or
// after.
type Collector struct {
	// mu is held for reading while Collect reads the dictionaries, so that
	// RemoveDict, which holds it for writing, returns only when no Collect
	// reads the dictionary it removed.
	mu       sync.RWMutex
	dicts    []namedDict
	limiters []*Limiter
	names    map[string]bool // "zone/" and "limiter/" names taken
	host     *hostCounts     // CountHostIn's, or nil
}

type namedDict struct {
	name string
	d    *dict.Dict
}

// NewCollector returns a Collector of nothing yet.
func NewCollector() *Collector {
	return &Collector{names: map[string]bool{}}
}

// AddDict exports d's Stats under the label zone=name, until RemoveDict
// or until d is closed: a scrape leaves out a Dict whose Err is not nil,
// whose figures would read as zeros (a counter falling to 0 reads as a
// reset, the gauges as an empty zone). Errors: ErrNilDict, ErrDuplicate for
// a name added and not removed, closed Dict or not.
func (c *Collector) AddDict(name string, d *dict.Dict) error {
	if d == nil {
		return ErrNilDict
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names["zone/"+name] {
		return fmt.Errorf("%w: zone %q", ErrDuplicate, name)
	}
	c.names["zone/"+name] = true
	c.dicts = append(c.dicts, namedDict{name, d})
	return nil
}

// RemoveDict stops exporting the dictionary added under name and frees
// the name for AddDict, as for a Dict reopened. It reports whether there
// was one. When it returns no Collect reads the dictionary, so remove a
// Dict before closing it: Close must not race with its Stats.
func (c *Collector) RemoveDict(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.dicts, func(nd namedDict) bool { return nd.name == name })
	if i < 0 {
		return false
	}
	c.dicts = slices.Delete(c.dicts, i, i+1)
	delete(c.names, "zone/"+name)
	return true
}

// AddLimiter returns l wrapped to count its decisions, exported under the
// label limiter=name with l's limiter.Stats when it has them. Use the
// returned Limiter in l's place. Errors: ErrNilLimiter, ErrDuplicate for a
// name added and not removed (RemoveLimiter), and ErrKeyTooLong (see
// CountHostIn).
func (c *Collector) AddLimiter(name string, l limiter.Limiter) (limiter.Limiter, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names["limiter/"+name] {
		return nil, fmt.Errorf("%w: limiter %q", ErrDuplicate, name)
	}
	w := &Limiter{name: name, l: l}
	w.dry, _ = l.(dryRunner)
	if c.host != nil {
		if err := checkHostName(name); err != nil {
			return nil, err
		}
		w.host.Store(c.host.handles(name))
	}
	c.names["limiter/"+name] = true
	c.limiters = append(c.limiters, w)
	return w.wrapped(), nil
}

// RemoveLimiter stops exporting the limiter added under name and frees
// the name for AddLimiter. It reports whether there was one. The Limiter
// AddLimiter returned still works, its counts no longer exported; one
// added again under the name counts from 0, which Prometheus reads as a
// counter reset.
func (c *Collector) RemoveLimiter(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.limiters, func(l *Limiter) bool { return l.name == name })
	if i < 0 {
		return false
	}
	c.limiters = slices.Delete(c.limiters, i, i+1)
	delete(c.names, "limiter/"+name)
	return true
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range dictDescs {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{descDecisions, descProcessDecisions, descDryRun, descForcible, descRetries, descEvicted} {
		ch <- d
	}
}

// Collect reads every open dictionary's Stats, leaving out one whose Err
// is not nil (closed, or faulted under GuardFaults), and every limiter's
// counts.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics() {
		ch <- m
	}
}

// metrics reads the figures under c.mu, for Collect to send after.
func (c *Collector) metrics() []prometheus.Metric {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var ms []prometheus.Metric
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...))
	}
	// The dry-run counts first: each is a read of its zone, which the
	// zone's Stats then count.
	for _, l := range c.limiters {
		if l.dry == nil {
			continue
		}
		if n, err := l.dry.DryRunRejected(); err == nil {
			counter(descDryRun, uint64(n), l.name)
		} // else the zone is closed: no series
	}
	for _, nd := range c.dicts {
		if nd.d.Err() != nil {
			continue
		}
		s := nd.d.Stats()
		for i, m := range zonemetrics.All {
			vt := prometheus.GaugeValue
			if m.Type == zonemetrics.Counter {
				vt = prometheus.CounterValue
			}
			ms = append(ms, prometheus.MustNewConstMetric(dictDescs[i], vt, float64(m.Value(s)), nd.name))
		}
	}
	if c.host != nil {
		_ = c.host.c.Sync() // a failed write is kept for the next sync
	}
	for _, l := range c.limiters {
		if c.host != nil {
			ms = c.host.metrics(ms, l)
		} else {
			counter(descDecisions, l.allowed.Load(), l.name, "allowed")
			counter(descDecisions, l.rejected.Load(), l.name, "rejected")
			counter(descDecisions, l.errors.Load(), l.name, "error")
		}
		if s, ok := l.l.(statser); ok {
			st := s.Stats()
			counter(descForcible, st.Forcible, l.name)
			counter(descRetries, st.Retries, l.name)
			counter(descEvicted, st.Evicted, l.name)
		}
	}
	return ms
}
