// Package zonemetrics names the figures of dict.Stats as metrics, once, for
// both places that export them: `worker serve`'s /metrics, written by
// hand, and the Prometheus collector of contrib/prometheus. Each figure of
// Stats is one metric here, a gauge or a counter as its type says: a
// counter (a uint64 of Stats, which only grows) ends in _total.
package zonemetrics

import "github.com/shmzone/shmzone/dict"

// Type is a metric's type, as the Prometheus text format spells it.
type Type string

// The types a figure of Stats takes.
const (
	Gauge   Type = "gauge"
	Counter Type = "counter"
)

// Metric is one figure of dict.Stats as a metric.
type Metric struct {
	Name string
	Type Type
	Help string
	// Value returns the figure from s. Every figure is at least 0.
	Value func(s dict.Stats) uint64
}

// All are the figures of dict.Stats, each once, in the order in which the
// exporters write them.
var All = []Metric{
	{"shmzone_capacity_bytes", Gauge, "Zone size in bytes.",
		func(s dict.Stats) uint64 { return uint64(s.Capacity) }},
	{"shmzone_free_bytes", Gauge, "Bytes allocatable without eviction.",
		func(s dict.Stats) uint64 { return uint64(s.FreeSpace) }},
	{"shmzone_shards", Gauge, "Shard count.",
		func(s dict.Stats) uint64 { return uint64(s.Shards) }},
	{"shmzone_entries", Gauge, "Entries, expired ones not yet reclaimed included.",
		func(s dict.Stats) uint64 { return uint64(s.Entries) }},
	{"shmzone_busy_shards", Gauge, "Shards left out of the other figures because a live process held their lock past the lock timeout.",
		func(s dict.Stats) uint64 { return uint64(s.Busy) }},
	{"shmzone_protected_entries", Gauge, "Entries used again, which eviction takes last.",
		func(s dict.Stats) uint64 { return uint64(s.Protected) }},
	{"shmzone_held_pages", Gauge, "Slab pages that open processes hold for the entries they write.",
		func(s dict.Stats) uint64 { return uint64(s.HeldPages) }},
	{"shmzone_stranded_bytes", Gauge, "Free bytes in slab pages that also hold entries, usable only by entries of their size class.",
		func(s dict.Stats) uint64 { return uint64(s.StrandedBytes) }},
	{"shmzone_hits_total", Counter, "Reads and increments that found a live key.",
		func(s dict.Stats) uint64 { return s.Hits }},
	{"shmzone_misses_total", Counter, "Reads and increments that did not.",
		func(s dict.Stats) uint64 { return s.Misses }},
	{"shmzone_writes_total", Counter, "Successful writes.",
		func(s dict.Stats) uint64 { return s.Writes }},
	{"shmzone_evictions_total", Counter, "Live entries evicted to make room.",
		func(s dict.Stats) uint64 { return s.Evictions }},
	{"shmzone_lost_total", Counter, "Keys written anew while their evicted entry would still have been live (errs low).",
		func(s dict.Stats) uint64 { return s.Lost }},
	{"shmzone_expirations_total", Counter, "Expired entries reclaimed.",
		func(s dict.Stats) uint64 { return s.Expirations }},
	{"shmzone_lock_waits_total", Counter, "Lock acquisitions that had to wait.",
		func(s dict.Stats) uint64 { return s.LockWaits }},
	{"shmzone_recoveries_total", Counter, "Shards rebuilt after a dead lock owner or corruption.",
		func(s dict.Stats) uint64 { return s.Recoveries }},
	{"shmzone_moves_total", Counter, "Entries moved to the pages of the process that writes them.",
		func(s dict.Stats) uint64 { return s.Moves }},
}
