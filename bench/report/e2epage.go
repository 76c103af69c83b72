package main

// e2epage.go: the tables and targets of the end-to-end section.

import (
	"fmt"
	"slices"
	"strings"
)

// runOf returns the run of a framework and configuration in round r, or
// nil.
func (s *e2eStep) runOf(r int, framework, config string) *e2eRun {
	if s == nil {
		return nil
	}
	for i := range s.Runs {
		if x := &s.Runs[i]; x.Round == r && x.Framework == framework && x.Config == config {
			return x
		}
	}
	return nil
}

// rounds returns the rounds that have runs, in order.
func (s *e2eStep) rounds() []int {
	if s == nil {
		return nil
	}
	var rs []int
	for _, r := range s.Runs {
		if !slices.Contains(rs, r.Round) {
			rs = append(rs, r.Round)
		}
	}
	slices.Sort(rs)
	return rs
}

// reqPerSec and cpuPerReq are the figures the section compares.
func reqPerSec(r e2eRun) float64 { return r.ReqPerSec }
func cpuPerReq(r e2eRun) float64 { return r.cpuPerRequest() }

// medianRatio returns the median over the rounds of f of a framework's run
// of config over f of its run with no limiter in the same round. A round
// without both runs, or with a figure of zero, counts for nothing.
func (s *e2eStep) medianRatio(framework, config string, f func(e2eRun) float64) (float64, bool) {
	var rs []float64
	for _, r := range s.rounds() {
		base, with := s.runOf(r, framework, "none"), s.runOf(r, framework, config)
		if base == nil || with == nil || f(*base) <= 0 || f(*with) <= 0 {
			continue
		}
		rs = append(rs, f(*with)/f(*base))
	}
	return median(rs)
}

// medianOf returns the median over the rounds of f of a framework's runs
// of config, and those runs in the order they ran.
func (s *e2eStep) medianOf(framework, config string, f func(e2eRun) float64) (float64, []e2eRun) {
	var vs []float64
	var runs []e2eRun
	if s != nil {
		for _, r := range s.Runs {
			if r.Framework == framework && r.Config == config {
				vs = append(vs, f(r))
				runs = append(runs, r)
			}
		}
	}
	m, _ := median(vs)
	return m, runs
}

// The targets of the end-to-end section, each framework's.
const (
	e2eMinThroughput = 0.95 // req/s with the limiter and headers over none
	e2eMaxCPU        = 1.08 // CPU per request with the limiter and headers over none
	e2eMinFlood      = 1.0  // req/s under a 429 flood over none
)

func (v *view) e2eTargets() {
	for _, fw := range e2eFrameworks {
		thr, ok := v.results.E2E.medianRatio(fw.id, "headers", reqPerSec)
		got := ratio(thr, 1, ok)
		v.target("end to end, "+fw.name+": req/s with the limiter and headers over none", fmt.Sprintf("≥ %.2f×", e2eMinThroughput), got, shown(got) >= e2eMinThroughput, ok)
		cpu, ok := v.results.E2E.medianRatio(fw.id, "headers", cpuPerReq)
		got = ratio(cpu, 1, ok)
		v.target("end to end, "+fw.name+": server CPU per request with the limiter and headers over none", fmt.Sprintf("≤ %.2f×", e2eMaxCPU), got, shown(got) <= e2eMaxCPU, ok)
		fl, ok := v.results.E2E.medianRatio(fw.id, "flood", reqPerSec)
		got = ratio(fl, 1, ok)
		v.target("end to end, "+fw.name+": req/s under a 429 flood over none", fmt.Sprintf("≥ %.2f×", e2eMinFlood), got, shown(got) >= e2eMinFlood, ok)
	}
	const prefix, suffix = "BenchmarkMiddleware/mw=", "/goroutines=1"
	for _, m := range e2eMiddleware {
		val := func(mw string) (float64, bool) { return v.goVal(m.step, prefix+mw+suffix, "ns/op") }
		none, ok1 := val("none")
		with, ok2 := val(m.mw)
		bare, ok3 := val(m.mw + "-noheaders")
		ok := ok1 && ok2 && ok3 && bare > none
		var x float64
		if ok {
			x = (with - bare) / (bare - none)
		}
		got := ratio(x, 1, ok)
		v.target("in process, "+m.framework+": the headers' ns over the decision's", "≤ 1.00×", got, shown(got) <= 1, ok)
		if m.framework == "net/http" {
			continue // http.Header's values allocate
		}
		a, ok := v.goVal(m.step, prefix+m.mw+suffix, "allocs/op")
		v.target("in process, "+m.framework+": allocations of an admitted request", "0", fmt.Sprintf("%g", a), a == 0, ok)
	}
}

// e2eMiddleware are the mw= cases of each middleware benchmark, by step:
// none, the middleware, the middleware without headers, and the
// middleware under a flood of rejections. The headers' cost is the
// middleware's ns/op less its ns/op without headers. The decision's is
// the latter less none's.
var e2eMiddleware = []struct{ framework, step, mw string }{
	{"net/http", "httplimit", "httplimit"},
	{"fasthttp", "fasthttp", "shmfasthttp"},
	{"fiber", "fiber", "shmfiber"},
}

func (v *view) e2eTables() {
	s := v.results.E2E
	if s != nil && s.Apart {
		v.E2EApart = fmt.Sprintf("%s at %s UTC", s.Started.Format("2006-01-02"), s.Started.Format("15:04"))
	}
	v.E2ERatios = table{head: []string{"framework", "req/s, limiter over none", "CPU/request, limiter over none",
		"req/s, no headers over none", "CPU/request, no headers over none", "req/s, 429 flood over none",
		"req/s, middleware alone over none", "CPU/request, middleware alone over none"}}
	for _, fw := range e2eFrameworks {
		row := []string{fw.name}
		for _, c := range []struct {
			config string
			f      func(e2eRun) float64
		}{{"headers", reqPerSec}, {"headers", cpuPerReq}, {"noheaders", reqPerSec}, {"noheaders", cpuPerReq}, {"flood", reqPerSec},
			{"static", reqPerSec}, {"static", cpuPerReq}} {
			x, ok := s.medianRatio(fw.id, c.config, c.f)
			row = append(row, ratio(x, 1, ok))
		}
		v.E2ERatios.add(row...)
	}
	v.E2ERuns = table{head: []string{"framework", "configuration", "FLAGS", "req/s", "µs CPU/request", "socket errors", "runs (req/s)"}}
	for _, fw := range e2eFrameworks {
		for _, c := range e2eConfigs {
			rps, runs := s.medianOf(fw.id, c.id, reqPerSec)
			cpu, _ := s.medianOf(fw.id, c.id, cpuPerReq)
			var errs int64
			each := make([]string, len(runs))
			for i, r := range runs {
				errs += r.SocketErrors
				each[i] = rate(r.ReqPerSec, true)
			}
			ok := len(runs) > 0
			errCell := missing
			if ok {
				errCell = commas(float64(errs))
			}
			runsCell := strings.Join(each, ", ")
			if !ok {
				runsCell = missing
			}
			v.E2ERuns.add(fw.name, c.name, "`"+shellJoin(c.args)+"`", rate(rps, ok), micros(cpu, ok), errCell, runsCell)
		}
	}
	v.E2EGo = table{head: []string{"framework", "middleware", "ns/op", "allocs/op", "B/op", "overhead over none"}}
	for _, m := range e2eMiddleware {
		const prefix = "BenchmarkMiddleware/mw="
		const suffix = "/goroutines=1"
		base, bok := v.goVal(m.step, prefix+"none"+suffix, "ns/op")
		for _, mw := range []string{"none", m.mw, m.mw + "-noheaders", m.mw + "-flood"} {
			name := prefix + mw + suffix
			n, ok := v.goVal(m.step, name, "ns/op")
			b, bytesOK := v.goVal(m.step, name, "B/op")
			over := "baseline"
			if mw != "none" {
				over = overhead(n-base, ok && bok)
			}
			bytes := missing
			if bytesOK {
				bytes = fmt.Sprintf("%.0f", b)
			}
			v.E2EGo.add(m.framework, mw, ns(n, ok), v.allocs(m.step, name), bytes, over)
		}
	}
}

// micros formats microseconds with two decimals.
func micros(v float64, ok bool) string {
	if !ok {
		return missing
	}
	return fmt.Sprintf("%.2f", v)
}
