package shmprom

import (
	"fmt"
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
		"Decisions of this process's limiter, by decision: allowed, rejected or error.", []string{"limiter", "decision"}, nil)
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
// registry; dictionaries and limiters may be added before or after.
type Collector struct {
	mu       sync.Mutex
	dicts    []namedDict
	limiters []*Limiter
	names    map[string]bool // "zone/" and "limiter/" names taken
}

type namedDict struct {
	name string
	d    *dict.Dict
}

// NewCollector returns a Collector of nothing yet.
func NewCollector() *Collector {
	return &Collector{names: map[string]bool{}}
}

// AddDict exports d's Stats under the label zone=name. Errors: ErrNilDict,
// ErrDuplicate for a name already added.
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

// AddLimiter returns l wrapped to count its decisions, exported under the
// label limiter=name with l's limiter.Stats when it has them. Use the
// returned Limiter in l's place. Errors: ErrNilLimiter, ErrDuplicate for a
// name already added.
func (c *Collector) AddLimiter(name string, l limiter.Limiter) (limiter.Limiter, error) {
	if l == nil {
		return nil, ErrNilLimiter
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names["limiter/"+name] {
		return nil, fmt.Errorf("%w: limiter %q", ErrDuplicate, name)
	}
	c.names["limiter/"+name] = true
	w := &Limiter{name: name, l: l}
	c.limiters = append(c.limiters, w)
	return w.wrapped(), nil
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range dictDescs {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{descDecisions, descForcible, descRetries, descEvicted} {
		ch <- d
	}
}

// Collect reads every dictionary's Stats and every limiter's counts.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	dicts := c.dicts
	limiters := c.limiters
	c.mu.Unlock()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, nd := range dicts {
		s := nd.d.Stats()
		for i, m := range zonemetrics.All {
			vt := prometheus.GaugeValue
			if m.Type == zonemetrics.Counter {
				vt = prometheus.CounterValue
			}
			ch <- prometheus.MustNewConstMetric(dictDescs[i], vt, float64(m.Value(s)), nd.name)
		}
	}
	for _, l := range limiters {
		counter(descDecisions, l.allowed.Load(), l.name, "allowed")
		counter(descDecisions, l.rejected.Load(), l.name, "rejected")
		counter(descDecisions, l.errors.Load(), l.name, "error")
		if s, ok := l.l.(statser); ok {
			st := s.Stats()
			counter(descForcible, st.Forcible, l.name)
			counter(descRetries, st.Retries, l.name)
			counter(descEvicted, st.Evicted, l.name)
		}
	}
}
