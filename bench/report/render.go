package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

//go:embed results.md.tmpl
var pageTemplate string

var page = template.Must(template.New("RESULTS.md").Funcs(template.FuncMap{
	"pct": func(f float64) float64 { return 100 * f },
}).Parse(pageTemplate))

// view is what the template reads: the results, and the tables and
// sentences made from them.
type view struct {
	*results
	Machine            []string
	Targets            table
	DictOps, DictProcs table
	// KeyHash is internal/keyhash next to github.com/zeebo/xxh3.
	KeyHash                          table
	DensityLo, DensityHi, PerCounter string
	Counter, Limiter, LimiterProcs   table
	Flood, Redistier, TieredFlush    table
	// Fiber is contrib/fiber's middleware next to fiber's own limiter
	// and no limiter, at each goroutine count of its benchmark.
	Fiber                            table
	MatrixRatios, Matrix, Matrix100k table
	// MatrixOwn is the zone's worker bench runs at -keyset own.
	MatrixOwn        table
	Extra            table
	ChartRows        table
	Nginx, NginxPair table
	// NginxLimiter is limiter's Req and Count against
	// lua-resty-limit-traffic in nginx, at one and two processes.
	NginxLimiter table
	// NginxMeta is nginx.sh's metadata, "name: value" a line; NginxJIT
	// is its check that LuaJIT compiled every timed loop ("ok").
	NginxMeta []string
	NginxJIT  string
	// Procs is the matrix's two process counts the ratios compare, such
	// as "1 and 2".
	Procs string
	// KeyMemory is the counter's process memory per key, such as "222 B",
	// or "" when the run did not measure it; KeyMemoryBench is the
	// benchmark that measures it.
	KeyMemory, KeyMemoryBench string
	// E2ERatios are each framework's end-to-end ratios, E2ERuns the
	// medians of each configuration, and E2EGo the middleware benchmarks
	// in process.
	E2ERatios, E2ERuns, E2EGo table
	// E2EApart is the day and time `-only e2e` measured the end-to-end
	// section, or "" when it ran with the rest of the page.
	E2EApart string
}

// Run is results.run for the template.
func (v *view) Run(backend, op string, keys int) *matrixRun { return v.run(backend, op, keys) }

// RunKeyset is results.runKeyset for the template.
func (v *view) RunKeyset(backend, op string, keys int, keyset string) *matrixRun {
	return v.runKeyset(backend, op, keys, keyset)
}

// NginxRun is the nginx step, or nil when it was not measured.
func (v *view) NginxRun() *nginxStep { return v.results.Nginx }

func render(r *results) ([]byte, error) {
	v := &view{results: r}
	v.machineLines()
	v.targets()
	v.dict()
	v.keyHashTable()
	v.counterTables()
	v.limiterTables()
	v.redistierTable()
	v.fiberTable()
	v.matrixTables()
	v.nginxTable()
	v.e2eTables()
	var b bytes.Buffer
	if err := page.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (v *view) machineLines() {
	m := v.results.Machine
	kind := "a physical machine"
	if m.Virtual {
		kind = "a virtual machine"
	}
	v.Machine = []string{
		fmt.Sprintf("%d CPUs, `%s` (as `/proc/cpuinfo` names it), %d GiB, Linux %s, %s", m.CPUs, m.Model, m.MemGiB, m.Kernel, kind),
		"Go " + m.Go,
	}
	if m.Redis != "" {
		v.Machine = append(v.Machine, "redis-server "+m.Redis+", started on 127.0.0.1 by the run with `--save '' --appendonly no`; go-redis, one client per process")
	}
	if v.Chart.Browser != "" {
		v.Machine = append(v.Machine, v.Chart.Browser+" (headless), to render the chart")
	}
}

// goVal is the median of a unit of a Go benchmark step.
func (v *view) goVal(step, name, unit string) (float64, bool) {
	return v.Go[step].Samples.get(name, unit)
}

// target is one row of the targets table. Its callers judge ok on the
// figure as got shows it (shown), not the unrounded one.
func (v *view) target(what, want, got string, ok, measured bool) {
	verdict := "holds"
	switch {
	case !measured:
		verdict, got = "not measured", missing
	case !ok:
		verdict = "**missed**"
	}
	v.Targets.add(what, want, got, verdict)
}

func (v *view) targets() {
	v.Targets = table{head: []string{"target", "wanted", "measured", "verdict"}}
	atMostIn := func(what, step, name, unit string, limit float64) {
		x, ok := v.goVal(step, name, unit)
		got := ns(x, ok)
		v.target(what, fmt.Sprintf("≤ %g ns", limit), got+" ns", shown(got) <= limit, ok)
	}
	atMost := func(what, step, name string, limit float64) { atMostIn(what, step, name, "ns/op", limit) }
	atMost("dict incr, 1,000 keys", "dict-ops", "BenchmarkOps/op=incr/keys=1000", 30)
	atMost("dict get, 1,000 keys", "dict-ops", "BenchmarkOps/op=get/keys=1000", 30)
	atMost("dict set, 1,000 keys", "dict-ops", "BenchmarkOps/op=set/keys=1000", 60)
	atMostIn("dict clock read, every core reading (ns/read)", "dict-ops", "BenchmarkCoarseNow/clock=coarse", "ns/read", 2)
	v.zoneSizeTargets()
	scales := func(what, step, name string, want float64) {
		sc, ok := v.scaling(step, name)
		got := ratio(sc, 1, ok)
		v.target(what, fmt.Sprintf("≥ %g×", want), got, shown(got) >= want, ok)
	}
	scales("dict incr, 2 processes each on its own 1,000 random keys, over 1", "dict-procs", "BenchmarkProcs/op=incr/keys=own", 1.8)
	scales("dict get, 2 processes over the same 1,000 random keys, over 1", "dict-procs", "BenchmarkProcs/op=get/keys=shared", 1.8)
	lo := 0
	if len(v.Density.Counters) > 0 {
		lo = slices.Min(v.Density.Counters)
	}
	v.target("counters in a 10 MiB zone before the first eviction (least of the runs)", "≥ 160,000", commas(float64(lo)), lo >= 160000, lo > 0)
	atMost("counter incr by key", "counter", "BenchmarkCounter/op=incr/keys=1000", 15)
	atMost("counter handle Add", "counter", "BenchmarkCounter/op=handle-add", 5)
	g1, ok1 := v.goVal("counter", "BenchmarkCounter/op=incr-parallel/goroutines=1", "ops/s")
	g2, ok2 := v.goVal("counter", "BenchmarkCounter/op=incr-parallel/goroutines=2", "ops/s")
	twoOverOne := ratio(g2, g1, ok1 && ok2)
	v.target("counter, 2 goroutines over 1", "≥ 1.7×", twoOverOne, shown(twoOverOne) >= 1.7, ok1 && ok2)
	atMost("limiter req (leaky bucket)", "limiter", "BenchmarkLimiter/op=req/keys=1000", 60)
	atMost("limiter count (fixed window)", "limiter", "BenchmarkLimiter/op=count/keys=1000", 40)
	// A Req decision is a lookup and an in-place write of 16 bytes: it
	// should cost about one dict Incr, measured in the same run.
	reqNs, okR := v.goVal("limiter", "BenchmarkLimiter/op=req/keys=1000", "ns/op")
	incrNs, okI := v.goVal("dict-ops", "BenchmarkOps/op=incr/keys=1000", "ns/op")
	perIncr := ratio(reqNs, incrNs, okR && okI)
	v.target("limiter req decision over a dict incr, 1,000 keys, same run", "≤ 1.5×", perIncr, shown(perIncr) <= 1.5, okR && okI)
	for _, l := range []string{"count", "gcra"} {
		n, ok := v.goVal("limiter", "BenchmarkLimiter/op="+l+"/keys=1000", "ns/op")
		r := ratio(n, incrNs, ok && okI)
		v.target("limiter "+l+" decision over a dict incr, 1,000 keys, same run", "≤ 1.5×", r, shown(r) <= 1.5, ok && okI)
	}
	scales("limiter req, a flood of rejections on 4 keys every process shares, 2 processes over 1", "limiter", "BenchmarkLimiter/op=req/keys=hot", 1.8)
	scales("limiter req, 2 processes each on its own 1,000 random clients, over 1", "limiter", "BenchmarkLimiter/op=req/keys=own", 1.7)
	scales("limiter count, 2 processes each on its own 1,000 random clients, over 1", "limiter", "BenchmarkLimiter/op=count/keys=own", 1.7)
	// A host's flush must keep up with its interval: 40 µs a key, or 2,500
	// keys every 100 ms. The least rate of the four rows is judged.
	flushRate, flushWhere := 0.0, ""
	for _, keys := range []int{10_000, 100_000} {
		for _, b := range []string{"redis-loopback", "cluster-loopback"} {
			r, ok := v.goVal("redistier", fmt.Sprintf("BenchmarkTieredFlush/keys=%d/backend=%s", keys, b), "keys/s")
			if ok && (flushWhere == "" || r < flushRate) {
				flushRate, flushWhere = r, fmt.Sprintf("%s keys, %s", commas(float64(keys)), b)
			}
		}
	}
	flushCell := rate(flushRate, flushWhere != "")
	v.target("tiered flush, least of 10,000 and 100,000 keys, one server and a cluster (keys/s)", "≥ 25 k",
		fmt.Sprintf("%s (%s)", flushCell, flushWhere), shownRate(flushCell) >= 25e3, flushWhere != "")
	v.peerTargets()
	v.e2eTargets()
}

// peerTargets are the targets against the peers: Redis in the matrix and
// nginx's lua_shared_dict and lua-resty-limit-traffic.
func (v *view) peerTargets() {
	// zone over Redis: the least ratio over every op and procs of the
	// 1,000-key matrix.
	least, where := 0.0, ""
	for _, op := range []string{"incr", "get", "set", "req", "count"} {
		z, rd := v.run("zone", op, 1000), v.run("redis", op, 1000)
		if z == nil || rd == nil {
			continue
		}
		for _, zr := range z.Rows {
			rr := rd.row(zr.Procs)
			if rr == nil || rr.OpsPerSec <= 0 {
				continue
			}
			if x := zr.OpsPerSec / rr.OpsPerSec; where == "" || x < least {
				least, where = x, fmt.Sprintf("%s at procs %d", op, zr.Procs)
			}
		}
	}
	leastCell := ratio(least, 1, true)
	v.target("zone over Redis, least of incr/get/set/req/count at each procs (1,000 keys)", "≥ 100×",
		fmt.Sprintf("%s (%s)", leastCell, where), shown(leastCell) >= 100, where != "")
	nx := func(what, op string, keys, workers int, want float64) {
		r := v.results.Nginx.row(op, keys, workers)
		ok := r != nil
		x := 0.0
		if ok {
			x = r.Nginx / r.Zone
		}
		got := ratio(x, 1, ok)
		v.target(what, fmt.Sprintf("≥ %g×", want), got, shown(got) >= want, ok)
	}
	nx("zone over nginx lua_shared_dict, incr at 1,000 keys", "incr", 1000, 1, 2)
	nx("zone over nginx lua_shared_dict, get at 100,000 keys", "get", 100000, 1, 2)
	nx("limiter Req over nginx resty.limit.req, 1 process on 1,000 clients", "req", 1000, 1, 2)
	nx("limiter Req over nginx resty.limit.req, 2 processes each on its own 1,000 clients", "req", 1000, 2, 2)
	nx("limiter Count over nginx resty.limit.count, 1 process on 1,000 clients", "count", 1000, 1, 2)
	nx("limiter Count over nginx resty.limit.count, 2 processes each on its own 1,000 clients", "count", 1000, 2, 2)
	nx("limiter req, a flood of rejections on 4 keys every process shares, 2 processes, over nginx's 2 workers", "reqhot", 4, 2, 4)
}

// scaling returns ops/s at procs=2 over procs=1 of a Go benchmark that
// reports ops/s, name being all but its "/procs=N".
func (v *view) scaling(step, name string) (float64, bool) {
	one, ok1 := v.goVal(step, name+"/procs=1", "ops/s")
	two, ok2 := v.goVal(step, name+"/procs=2", "ops/s")
	if !ok1 || !ok2 || one <= 0 {
		return 0, false
	}
	return two / one, true
}

func (v *view) allocs(step, name string) string {
	a, ok := v.goVal(step, name, "allocs/op")
	if !ok {
		return missing
	}
	return fmt.Sprintf("%g", a)
}

func (v *view) dict() {
	v.DictOps = table{head: []string{"op", "keys=1", "keys=1,000", "keys=100,000", "allocs/op"}}
	for _, op := range []string{"incr", "get", "getinto", "set", "add-delete", "update", "mutate", "incrinit-ttl"} {
		row := []string{op}
		allocs := map[string]bool{}
		for _, k := range []string{"1", "1000", "100000"} {
			name := "BenchmarkOps/op=" + op + "/keys=" + k
			row = append(row, ns(v.goVal("dict-ops", name, "ns/op")))
			allocs[v.allocs("dict-ops", name)] = true
		}
		row = append(row, strings.Join(sortedKeys(allocs), ", "))
		v.DictOps.add(row...)
	}
	h, ok := v.goVal("dict-ops", "BenchmarkHashKey", "ns/op")
	v.DictOps.add("hashKey (15-byte key)", ns(h, ok), missing, missing, v.allocs("dict-ops", "BenchmarkHashKey"))

	v.DictProcs = procsTable()
	for _, c := range []struct{ op, keys string }{{"incr", "own"}, {"incr", "mixed"}, {"incr", "apart"}, {"get", "shared"}, {"incr", "hot"}, {"get", "hot"}} {
		v.procsRow(&v.DictProcs, c.op, c.keys, "dict-procs", "BenchmarkProcs/op="+c.op+"/keys="+c.keys)
	}
	if c := v.Density.Counters; len(c) > 0 {
		lo, hi := slices.Min(c), slices.Max(c)
		v.DensityLo, v.DensityHi = commas(float64(lo)), commas(float64(hi))
		v.PerCounter = fmt.Sprintf("%.0f", float64(10<<20)/float64(lo))
	}
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// spread is "lo–hi" of a unit over a benchmark's runs.
func (v *view) spread(step, name, unit string) string {
	lo, hi, ok := v.Go[step].Samples.span(name, unit)
	if !ok {
		return missing
	}
	return ns(lo, true) + "–" + ns(hi, true)
}

// keyHashShapes are the key shapes of contrib/xxh3cmp's BenchmarkHash.
var keyHashShapes = []string{"ipv4", "limiter-ipv4", "limiter-ipv6"}

func (v *view) keyHashTable() {
	v.KeyHash = table{head: []string{"keys", "keyhash ns/op", "zeebo/xxh3 ns/op", "zeebo over keyhash"}}
	for _, shape := range keyHashShapes {
		own, ok := v.goVal("keyhash", "BenchmarkHash/keys="+shape+"/impl=keyhash", "ns/op")
		lib, lok := v.goVal("keyhash", "BenchmarkHash/keys="+shape+"/impl=zeebo", "ns/op")
		v.KeyHash.add(shape, ns(own, ok), ns(lib, lok), ratio(lib, own, ok && lok))
	}
}

func (v *view) counterTables() {
	v.Counter = table{head: []string{"benchmark", "ns/op", "runs ranged", "ops/s", "allocs/op"}}
	for _, b := range []string{"op=incr/keys=1000", "op=handle-add", "op=incr-parallel/goroutines=1", "op=incr-parallel/goroutines=2", "op=sync/dirty=1000"} {
		name := "BenchmarkCounter/" + b
		n, ok := v.goVal("counter", name, "ns/op")
		o, ook := v.goVal("counter", name, "ops/s")
		cell := ns(n, ok)
		if k, kok := v.goVal("counter", name, "ns/key"); kok {
			cell = fmt.Sprintf("%s (%.1f per dirty key)", cell, k)
		}
		v.Counter.add(b, cell, v.spread("counter", name, "ns/op"), rate(o, ook), v.allocs("counter", name))
	}
	v.KeyMemoryBench = "BenchmarkCounter/" + keyMemoryBench
	if m, ok := v.goVal("counter", v.KeyMemoryBench, "B/key"); ok {
		v.KeyMemory = fmt.Sprintf("%.0f B", m)
	}
}

// keyMemoryBench is counter's benchmark of the process memory a key costs.
const keyMemoryBench = "op=key-memory/keys=100000"

func (v *view) limiterTables() {
	v.Limiter = table{head: []string{"limiter", "ns/op", "runs ranged", "allocs/op"}}
	for _, l := range []string{"req", "req-reject", "count", "conn", "gcra", "sliding", "combine", "update"} {
		name := "BenchmarkLimiter/op=" + l + "/keys=1000"
		n, ok := v.goVal("limiter", name, "ns/op")
		v.Limiter.add(l, ns(n, ok), v.spread("limiter", name, "ns/op"), v.allocs("limiter", name))
	}
	v.LimiterProcs = procsTable()
	for _, l := range []string{"req", "count"} {
		v.procsRow(&v.LimiterProcs, l, "own", "limiter", "BenchmarkLimiter/op="+l+"/keys=own")
	}
	v.procsRow(&v.LimiterProcs, "req", "hot", "limiter", "BenchmarkLimiter/op=req/keys=hot")
	v.Flood = table{head: []string{"limiter", "quiet ns/op", "quiet decisions/s", "flood ns/op", "flood decisions/s", "flood over quiet", "evictions/op", "allocs/op"}}
	for _, l := range []string{"req", "count", "gcra", "sliding"} {
		name := "BenchmarkFlood/kind=" + l + "/traffic="
		q, okq := v.goVal("limiter", name+"quiet", "ns/op")
		qr, okqr := v.goVal("limiter", name+"quiet", "decisions/s")
		f, okf := v.goVal("limiter", name+"flood", "ns/op")
		fr, okfr := v.goVal("limiter", name+"flood", "decisions/s")
		ev, okev := v.goVal("limiter", name+"flood", "evictions/op")
		evs := missing
		if okev {
			evs = fmt.Sprintf("%.2f", ev)
		}
		allocs := map[string]bool{v.allocs("limiter", name+"quiet"): true, v.allocs("limiter", name+"flood"): true}
		v.Flood.add(l, ns(q, okq), rate(qr, okqr), ns(f, okf), rate(fr, okfr), ratio(fr, qr, okqr && okfr), evs, strings.Join(sortedKeys(allocs), ", "))
	}
}

// procsTable is a table of multi-process Go benchmarks: ops/s of all
// processes together at 1 and 2 processes, and the second over the first.
func procsTable() table {
	return table{head: []string{"op", "keys", "1 process ops/s", "2 processes ops/s", "2 processes, runs ranged", "2 over 1"}}
}

// procsRow adds the row of a benchmark whose procs=1 and procs=2 cases
// report ops/s, name being all but their "/procs=N".
func (v *view) procsRow(t *table, op, keys, step, name string) {
	a, ok1 := v.goVal(step, name+"/procs=1", "ops/s")
	b, ok2 := v.goVal(step, name+"/procs=2", "ops/s")
	t.add(op, keys, rate(a, ok1), rate(b, ok2), v.rateSpread(step, name+"/procs=2"), ratio(b, a, ok1 && ok2))
}

// rateSpread is "lo–hi" ops/s over a benchmark's runs.
func (v *view) rateSpread(step, name string) string {
	lo, hi, ok := v.Go[step].Samples.span(name, "ops/s")
	if !ok {
		return missing
	}
	return rate(lo, true) + "–" + rate(hi, true)
}

func (v *view) redistierTable() {
	v.Redistier = table{head: []string{"limiter", "p50", "p99", "mean", "allocs/op"}}
	for _, l := range []string{"req", "count", "sliding", "gcra", "tiered"} {
		name := "BenchmarkDecision/op=" + l + "/backend=redis-loopback"
		p50, ok50 := v.goVal("redistier", name, "p50-ns")
		p99, ok99 := v.goVal("redistier", name, "p99-ns")
		mean, okm := v.goVal("redistier", name, "ns/op")
		v.Redistier.add(l, latency(p50, ok50), latency(p99, ok99), latency(mean, okm), v.allocs("redistier", name))
	}
	v.TieredFlush = table{head: []string{"backend", "keys", "flush", "keys/s", "allocs/op"}}
	for _, keys := range []int{10_000, 100_000} {
		for _, b := range []string{"redis-loopback", "cluster-loopback"} {
			name := fmt.Sprintf("BenchmarkTieredFlush/keys=%d/backend=%s", keys, b)
			t, okt := v.goVal("redistier", name, "ns/op")
			r, okr := v.goVal("redistier", name, "keys/s")
			v.TieredFlush.add(b, commas(float64(keys)), latency(t, okt), rate(r, okr), v.allocs("redistier", name))
		}
	}
}

// backends are the matrix's columns, zone first.
var backends = []string{"zone", "redis", "flock", "mutex"}

func (v *view) matrixTables() {
	procs, _ := parseProcs(v.Settings.Procs)
	ps := make([]string, len(procs))
	for i, p := range procs {
		ps[i] = itoa(p)
	}
	v.Procs = strings.Join(ps, " and ")
	if len(ps) > 2 {
		v.Procs = strings.Join(ps[:len(ps)-1], ", ") + " and " + ps[len(ps)-1]
	}

	head := []string{"op", "procs"}
	for _, b := range backends {
		head = append(head, b+" ops/s")
	}
	for _, b := range backends[1:] {
		head = append(head, "zone/"+b)
	}
	v.MatrixRatios = table{head: head}
	for _, op := range []string{"incr", "get", "set", "req", "count"} {
		for _, p := range procs {
			row := []string{op, itoa(p)}
			z := v.run("zone", op, 1000).row(p)
			for _, b := range backends {
				r := v.run(b, op, 1000).row(p)
				if r == nil {
					row = append(row, missing)
				} else {
					row = append(row, rate(r.OpsPerSec, true))
				}
			}
			for _, b := range backends[1:] {
				r := v.run(b, op, 1000).row(p)
				if r == nil || z == nil {
					row = append(row, missing)
				} else {
					row = append(row, ratio(z.OpsPerSec, r.OpsPerSec, true))
				}
			}
			v.MatrixRatios.add(row...)
		}
	}
	shared := func(m matrixRun) bool { return m.Keyset == "" }
	v.Matrix = v.detail(1000, func(m matrixRun) bool { return shared(m) && m.Backend != "tiered" && m.Op != "counter" })
	v.Matrix100k = v.detail(100000, shared)
	v.Extra = v.detail(1000, func(m matrixRun) bool { return shared(m) && (m.Backend == "tiered" || m.Op == "counter") })
	v.MatrixOwn = v.detail(1000, func(m matrixRun) bool { return m.Keyset == "own" })
	v.ChartRows = detailTable()
	for _, r := range v.Chart.Rows {
		v.ChartRows.add("zone incr", itoa(r.Procs), rate(r.OpsPerSec, true), ns(r.NsPerOp, true),
			latency(r.P50, true), latency(r.P99, true), latency(r.P999, true), scalingOf(v.Chart.Rows, r), "1 run")
	}
}

func detailTable() table {
	return table{head: []string{"op, backend", "procs", "ops/s", "ns/op", "p50", "p99", "p999", "over 1 proc", "runs (ops/s)"}}
}

// scalingOf is a row's ops/s over the procs=1 row's.
func scalingOf(rows []matrixRow, r matrixRow) string {
	for _, o := range rows {
		if o.Procs == 1 {
			return ratio(r.OpsPerSec, o.OpsPerSec, true)
		}
	}
	return missing
}

// detail is a row per run and procs of the matrix at a key count.
func (v *view) detail(keys int, keep func(matrixRun) bool) table {
	t := detailTable()
	for _, m := range v.results.Matrix {
		if m.Keys != keys || !keep(m) {
			continue
		}
		for _, r := range m.Rows {
			runs := make([]string, len(r.Runs))
			for i, x := range r.Runs {
				runs[i] = rate(x, true)
			}
			what := m.Op + ", " + m.Backend
			if m.Keyset != "" {
				what += ", " + m.Keyset + " keys"
			}
			t.add(what, itoa(r.Procs), rate(r.OpsPerSec, true), ns(r.NsPerOp, true),
				latency(r.P50, true), latency(r.P99, true), latency(r.P999, true), scalingOf(m.Rows, r), strings.Join(runs, ", "))
		}
	}
	return t
}

// nginxLimiter is a limiter row of nginx.sh: its op, the keys per process
// and what the page calls them.
type nginxLimiter struct {
	op, name string
	keys     int
	keysSay  string
}

// nginxLimiters are the ops of nginx.sh that are limiter decisions, not
// dict operations: req and count on each process's own 1,000 clients, and
// reqhot, req's flood of rejections on 4 keys every process shares.
var nginxLimiters = []nginxLimiter{
	{op: "req", name: "req", keys: 1000, keysSay: "1,000 own"},
	{op: "count", name: "count", keys: 1000, keysSay: "1,000 own"},
	{op: "reqhot", name: "req flood", keys: 4, keysSay: "4 shared"},
}

// isNginxLimiter reports whether op is one of nginxLimiters.
func isNginxLimiter(op string) bool {
	return slices.ContainsFunc(nginxLimiters, func(l nginxLimiter) bool { return l.op == op })
}

func (v *view) nginxTable() {
	v.Nginx = table{head: []string{"op", "keys", "nginx ns/op", "zone ns/op", "zone speed-up (nginx/zone)", "redis ns/op (procs=1)", "zone/redis"}}
	v.NginxPair = table{head: []string{"op", "keys per process", "nginx ops/s", "zone ops/s", "zone/nginx"}}
	v.nginxLimiterTable()
	if v.results.Nginx == nil {
		return
	}
	for _, m := range v.results.Nginx.Meta {
		f := strings.Split(m, "\t")
		switch f[0] {
		case "ops_per_s":
			if len(f) == 6 && !isNginxLimiter(f[1]) {
				a, errA := strconv.ParseFloat(f[4], 64)
				b, errB := strconv.ParseFloat(f[5], 64)
				ok := errA == nil && errB == nil
				v.NginxPair.add(f[1], f[2], rate(a, ok), rate(b, ok), ratio(b, a, ok))
			}
			continue
		case "jit_check":
			v.NginxJIT = strings.Join(f[1:], " ")
		case "jit_other_aborts":
			if len(f) == 6 {
				v.NginxMeta = append(v.NginxMeta, fmt.Sprintf("traces aborted in functions the timed loop calls, %s at %s keys, workers %s: %s, why: %s", f[1], f[2], f[3], f[4], f[5]))
				continue
			}
		case "loop_ns_per_op":
			if len(f) == 3 {
				v.NginxMeta = append(v.NginxMeta, fmt.Sprintf("loop overhead at %s keys (the same Lua loop without the dict call, part of every nginx figure): %s ns/op", f[1], f[2]))
			}
			continue
		}
		v.NginxMeta = append(v.NginxMeta, f[0]+": "+strings.Join(f[1:], " "))
	}
	for _, r := range v.results.Nginx.Rows {
		if r.Workers != 1 || isNginxLimiter(r.Op) {
			continue
		}
		redis, zr := missing, missing
		if rr := v.run("redis", r.Op, r.Keys).row(1); rr != nil {
			redis = ns(rr.NsPerOp, true)
			zr = ratio(rr.NsPerOp, r.Zone, true)
		}
		v.Nginx.add(r.Op, commas(float64(r.Keys)), ns(r.Nginx, true), ns(r.Zone, true),
			ratio(r.Nginx, r.Zone, true), redis, zr)
	}
}

// nginxLimiterTable makes NginxLimiter, a row per limiter of nginxLimiters
// and process count, "—" where the nginx step has no row.
func (v *view) nginxLimiterTable() {
	v.NginxLimiter = table{head: []string{"limiter", "keys per process", "processes", "nginx ns/op per process", "zone ns/op per process", "nginx ops/s", "zone ops/s", "zone speed-up (nginx/zone)"}}
	for _, l := range nginxLimiters {
		for _, w := range []int{1, 2} {
			r := v.results.Nginx.row(l.op, l.keys, w)
			if r == nil {
				v.NginxLimiter.add(l.name, l.keysSay, itoa(w), missing, missing, missing, missing, missing)
				continue
			}
			// ops/s of all processes together: each did its operations
			// in the time the slower one took.
			per := float64(w) * 1e9
			v.NginxLimiter.add(l.name, l.keysSay, itoa(w), ns(r.Nginx, true), ns(r.Zone, true),
				rate(per/r.Nginx, true), rate(per/r.Zone, true), ratio(r.Nginx, r.Zone, true))
		}
	}
}

// fiberMiddlewares are the mw= cases of contrib/fiber's BenchmarkMiddleware,
// the baseline without a limiter first.
var fiberMiddlewares = []string{"none", "shmfiber", "fiberlimiter"}

func (v *view) fiberTable() {
	v.Fiber = table{head: []string{"middleware", "goroutines", "ns/op", "allocs/op", "overhead over none"}}
	const prefix = "BenchmarkMiddleware/mw="
	var gs []int
	for name := range v.Go["fiber"].Samples {
		_, g, ok := strings.Cut(name, "/goroutines=")
		n, err := strconv.Atoi(g)
		if ok && err == nil && strings.HasPrefix(name, prefix) && !slices.Contains(gs, n) {
			gs = append(gs, n)
		}
	}
	if len(gs) == 0 {
		// Not measured: the rows the benchmark would have had, one
		// goroutine and GOMAXPROCS's default.
		gs = []int{1}
		if c := v.results.Machine.CPUs; c > 1 {
			gs = append(gs, c)
		}
	}
	slices.Sort(gs)
	for _, g := range gs {
		suffix := "/goroutines=" + itoa(g)
		base, bok := v.goVal("fiber", prefix+"none"+suffix, "ns/op")
		for _, mw := range fiberMiddlewares {
			name := prefix + mw + suffix
			n, ok := v.goVal("fiber", name, "ns/op")
			over := "baseline"
			if mw != "none" {
				over = overhead(n-base, ok && bok)
			}
			v.Fiber.add(mw, itoa(g), ns(n, ok), v.allocs("fiber", name), over)
		}
	}
}

// overhead formats a difference of nanoseconds per op with its sign.
func overhead(d float64, ok bool) string {
	switch {
	case !ok:
		return missing
	case d < 0:
		return "−" + ns(-d, true) + " ns"
	default:
		return "+" + ns(d, true) + " ns"
	}
}
