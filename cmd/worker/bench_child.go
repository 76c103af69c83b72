package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// benchConfigEnv carries a bench child's benchConfig, as JSON, and
// benchIDEnv its number in its row: 0, 1, … procs-1.
const (
	benchConfigEnv = "WORKER_BENCH_CONFIG"
	benchIDEnv     = "WORKER_BENCH_ID"
)

// progressEvery is how often a child reports its op count.
const progressEvery = 200 * time.Millisecond

// sampleEvery is how often a child times one op: every 64th, so the clock
// reads cost little of the throughput.
const sampleEvery = 64

// benchChild is one bench process. It opens its backend, prints "ready",
// waits for a line on stdin, runs the op for the duration, printing
// "progress OPS" every progressEvery, and ends with "result JSON".
func benchChild() int {
	if err := runBenchChild(os.Getenv(benchConfigEnv), os.Getenv(benchIDEnv), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker bench child:", err)
		return 1
	}
	return 0
}

func runBenchChild(conf, id string, in io.Reader, out io.Writer) error {
	var cfg benchConfig
	if err := json.Unmarshal([]byte(conf), &cfg); err != nil {
		return fmt.Errorf("bad %s: %w", benchConfigEnv, err)
	}
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return fmt.Errorf("bad %s %q: want a process number", benchIDEnv, id)
	}
	t, err := openTarget(cfg, n)
	if err != nil {
		return err
	}
	defer t.close()
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}
	res, err := loop(t, cfg, func(ops int64) { fmt.Fprintln(out, "progress", ops) })
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "result %s\n", b)
	return err
}

// loop runs t's op on pseudo-random keys until cfg.Duration has passed,
// timing every sampleEvery-th op, and calls progress every progressEvery.
func loop(t *target, cfg benchConfig, progress func(ops int64)) (childResult, error) {
	h := hist{}
	start := time.Now()
	end := start.Add(cfg.Duration)
	next := start.Add(progressEvery)
	rng := uint64(time.Now().UnixNano()) | 1
	n := uint64(cfg.Keys)
	var ops int64
	for {
		for range sampleEvery - 1 {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			if err := t.do(int(rng % n)); err != nil {
				return childResult{}, err
			}
		}
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		t0 := time.Now()
		if err := t.do(int(rng % n)); err != nil {
			return childResult{}, err
		}
		now := time.Now()
		h.add(int64(now.Sub(t0)))
		ops += sampleEvery
		if now.After(next) {
			progress(ops)
			next = next.Add(progressEvery)
		}
		if !now.Before(end) {
			return childResult{Ops: ops, Nanos: int64(now.Sub(start)), Latency: h}, nil
		}
	}
}
