package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress writes a line about the running row to stderr once a second:
// rewritten in place with \r when stderr is a terminal, else one line each.
type progress struct {
	w    io.Writer
	tty  bool
	used bool // a \r line is on the terminal
	// now and ticker are the clock; tests inject them.
	now    func() time.Time
	ticker func() (<-chan time.Time, func())
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, now: time.Now, ticker: secondTicker}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// row starts reporting on one row's children; the function it returns stops.
func (p *progress) row(cfg benchConfig, procs int, cs []*child) func() {
	stop := make(chan struct{})
	finished := make(chan struct{})
	start := p.now()
	ticks, stopTicks := p.ticker()
	go func() {
		defer close(finished)
		defer stopTicks()
		var last int64
		lastAt := start
		for {
			select {
			case <-stop:
				return
			case now := <-ticks:
				var ops int64
				for _, c := range cs {
					ops += c.ops.Load()
				}
				rate := float64(ops-last) / now.Sub(lastAt).Seconds()
				last, lastAt = ops, now
				line := fmt.Sprintf("bench %s %s procs=%d: %v/%v, %s ops/s",
					cfg.Backend, cfg.Op, procs, now.Sub(start).Round(time.Second), cfg.Duration, humanCount(rate))
				if p.tty {
					fmt.Fprintf(p.w, "\r\033[K%s", line)
					p.used = true
				} else {
					fmt.Fprintln(p.w, line)
				}
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// secondTicker ticks once a second.
func secondTicker() (<-chan time.Time, func()) {
	t := time.NewTicker(time.Second)
	return t.C, t.Stop
}

// done ends a \r progress line.
func (p *progress) done() {
	if p.used {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
