package main

import (
	"math/bits"
	"sort"
)

// hist is a log-linear latency histogram in nanoseconds: 16 linear
// sub-buckets per power of two, so a percentile is within 1/16 of the
// sample. Children fill one each and the parent adds them.
type hist map[int]int64

const subBits = 4

func bucketOf(ns int64) int {
	if ns < 1<<subBits {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - subBits - 1
	return (e+1)<<subBits | int(ns>>e)&(1<<subBits-1)
}

// bucketLow is the smallest value in bucket b.
func bucketLow(b int) int64 {
	if b < 1<<subBits {
		return int64(b)
	}
	e := b>>subBits - 1
	return (int64(1<<subBits) | int64(b&(1<<subBits-1))) << e
}

func (h hist) add(ns int64) { h[bucketOf(ns)]++ }

func (h hist) merge(o hist) {
	for b, n := range o {
		h[b] += n
	}
}

// quantile returns the low edge of the bucket holding quantile q (0 < q ≤ 1).
func (h hist) quantile(q float64) int64 {
	var total int64
	keys := make([]int, 0, len(h))
	for b, n := range h {
		total += n
		keys = append(keys, b)
	}
	if total == 0 {
		return 0
	}
	sort.Ints(keys)
	rank := int64(q*float64(total) + 0.5)
	rank = min(max(rank, 1), total)
	var seen int64
	for _, b := range keys {
		seen += h[b]
		if seen >= rank {
			return bucketLow(b)
		}
	}
	return bucketLow(keys[len(keys)-1])
}

// childResult is what one child reports when its run ends.
type childResult struct {
	Ops     int64         `json:"ops"`
	Nanos   int64         `json:"nanos"`
	Latency map[int]int64 `json:"latency"`
}

// row is one line of the results: one procs value of a run.
type row struct {
	Procs     int     `json:"procs"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	NsPerOp   float64 `json:"ns_per_op"`
	P50       int64   `json:"p50_ns"`
	P99       int64   `json:"p99_ns"`
	P999      int64   `json:"p999_ns"`
	Scaling   float64 `json:"scaling"`
}

// report is a whole bench run: what was measured and one row per procs.
type report struct {
	Backend  string `json:"backend"`
	Op       string `json:"op"`
	Keys     int    `json:"keys"`
	Keyset   string `json:"keyset"`
	Duration string `json:"duration"`
	Rows     []row  `json:"rows"`
}

// aggregate sums the children of one procs value into a row. ns/op is per
// process: the mean time one process spends on one op.
func aggregate(procs int, rs []childResult) row {
	r := row{Procs: procs}
	h := hist{}
	var nanos int64
	for _, c := range rs {
		r.Ops += c.Ops
		nanos = max(nanos, c.Nanos)
		h.merge(c.Latency)
		if c.Nanos > 0 {
			r.OpsPerSec += float64(c.Ops) / (float64(c.Nanos) / 1e9)
		}
	}
	r.Seconds = float64(nanos) / 1e9
	if r.OpsPerSec > 0 {
		r.NsPerOp = 1e9 * float64(procs) / r.OpsPerSec
	}
	r.P50, r.P99, r.P999 = h.quantile(0.50), h.quantile(0.99), h.quantile(0.999)
	return r
}

// scale sets each row's scaling: its ops/s over one process's, taken from
// the procs=1 row or, without one, the smallest procs row divided by its procs.
func scale(rows []row) {
	if len(rows) == 0 {
		return
	}
	base := rows[0]
	for _, r := range rows {
		if r.Procs < base.Procs {
			base = r
		}
	}
	one := base.OpsPerSec / float64(base.Procs)
	for i := range rows {
		if one > 0 {
			rows[i].Scaling = rows[i].OpsPerSec / one
		}
	}
}
