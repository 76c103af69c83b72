package main

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// samples holds the figures of repeated `go test -bench` runs: benchmark
// name (without the -GOMAXPROCS suffix) → unit ("ns/op", "ops/s", …) → one
// value per run, in the order the runs printed them.
type samples map[string]map[string][]float64

// procsSuffix is the "-2" that go test appends to a benchmark's name when
// GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads the output of `go test -bench` and returns its samples.
// Lines that are not benchmark results (goos:, PASS, ok, logs) are skipped;
// a result line that does not parse is an error, so that a format change is
// noticed rather than dropped.
func parseBench(out []byte) (samples, error) {
	s := samples{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		// Name, iterations, then value-unit pairs. A benchmark that failed
		// or only logged prints its name alone: skip it.
		if len(f) < 4 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("benchmark line %q: value without unit", line)
		}
		name := procsSuffix.ReplaceAllString(f[0], "")
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %v", line, err)
			}
			if s[name] == nil {
				s[name] = map[string][]float64{}
			}
			s[name][f[i+1]] = append(s[name][f[i+1]], v)
		}
	}
	return s, sc.Err()
}

// median returns the median of vs (the mean of the middle two for an even
// count), and false when vs is empty.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	c := slices.Clone(vs)
	slices.Sort(c)
	n := len(c)
	if n%2 == 1 {
		return c[n/2], true
	}
	return (c[n/2-1] + c[n/2]) / 2, true
}

// get returns the median of a benchmark's unit, and false when the run did
// not report it.
func (s samples) get(name, unit string) (float64, bool) {
	return median(s[name][unit])
}

// span returns the smallest and largest sample of a benchmark's unit.
func (s samples) span(name, unit string) (lo, hi float64, ok bool) {
	vs := s[name][unit]
	if len(vs) == 0 {
		return 0, 0, false
	}
	return slices.Min(vs), slices.Max(vs), true
}

// densityRE matches dict's TestDensity log line.
var densityRE = regexp.MustCompile(`(\d+) counters before the first eviction`)

// parseDensity returns the counter count of every TestDensity run in the
// verbose output of `go test -run TestDensity -v`.
func parseDensity(out []byte) []int {
	var ns []int
	for _, m := range densityRE.FindAllSubmatch(out, -1) {
		n, err := strconv.Atoi(string(m[1]))
		if err == nil {
			ns = append(ns, n)
		}
	}
	return ns
}
