package testutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchProcs times procs helper processes that work at once. It starts the
// helper name with args(i) for i in 0..procs-1. It waits until each says
// "ready", then starts them all together. Each does opsPerProc operations.
// BenchProcs reports their combined throughput as ops/s. b's timer runs
// only while they work. The helpers' side is BenchChild.
func BenchProcs(b *testing.B, procs int, name string, args func(i int) []string, opsPerProc int) {
	b.Helper()
	type child struct {
		p     *Proc
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	children := make([]child, procs)
	for i := range children {
		cmd := Helper(b, name, args(i)...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer cmd.Process.Kill()
		defer cmd.Wait()
		children[i] = child{stdin: stdin, out: bufio.NewScanner(stdout)}
	}
	for _, c := range children {
		if !c.out.Scan() || c.out.Text() != "ready" {
			b.Fatalf("testutil: %s did not get ready: %q %v", name, c.out.Text(), c.out.Err())
		}
	}
	b.ResetTimer()
	for _, c := range children {
		c.stdin.Close() // go
	}
	var slowest time.Duration
	for _, c := range children {
		if !c.out.Scan() {
			b.Fatalf("testutil: %s ended without a result: %v", name, c.out.Err())
		}
		ns, err := strconv.ParseInt(c.out.Text(), 10, 64)
		if err != nil {
			b.Fatalf("testutil: %s result %q: %v", name, c.out.Text(), err)
		}
		slowest = max(slowest, time.Duration(ns))
	}
	b.StopTimer()
	b.ReportMetric(float64(procs*opsPerProc)/slowest.Seconds(), "ops/s")
}

// BenchChild is a BenchProcs helper's side, once it is set up. It says
// "ready", and waits for the start: its stdin closing. It calls run, and
// prints how long run took in nanoseconds.
func BenchChild(run func() error) error {
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	start := time.Now()
	if err := run(); err != nil {
		return err
	}
	fmt.Println(time.Since(start).Nanoseconds())
	return nil
}

// Picker picks indexes in a pseudo-random order. It is a xorshift64
// generator, cheap enough to sit in a benchmark's loop. Its Next inlines.
// The zero Picker is not valid. Make one with NewPicker.
type Picker struct{ s uint64 }

// NewPicker returns a Picker started from seed.
func NewPicker(seed uint64) Picker { return Picker{s: seed | 1} }

// Next returns an index in [0, n), for n > 0.
func (p *Picker) Next(n int) int {
	s := p.s
	s ^= s << 13
	s ^= s >> 7
	s ^= s << 17
	p.s = s
	return int((s >> 32) * uint64(n) >> 32)
}

// RunBenchmarks runs the benchmarks of this test binary that pattern
// matches, in a process of their own. Each runs n iterations. It fails t
// unless they all pass and at least want of them report. make test runs no
// benchmark. The multi-process ones have helpers, turns and checks that
// only make bench would otherwise exercise. RunBenchmarks keeps them
// working.
func RunBenchmarks(t *testing.T, pattern string, n, want int) {
	t.Helper()
	cmd := childCmd("-test.run=^$")
	cmd.Args = append(cmd.Args, "-test.bench="+pattern, "-test.benchtime="+strconv.Itoa(n)+"x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testutil: benchmarks %q: %v\n%s", pattern, err, out)
	}
	got := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Benchmark") && strings.Contains(line, "ns/op") {
			got++
		}
	}
	if got < want {
		t.Fatalf("testutil: benchmarks %q: %d reported, want at least %d\n%s", pattern, got, want, out)
	}
}
