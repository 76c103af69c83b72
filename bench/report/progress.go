package main

import (
	"fmt"
	"io"
	"time"
)

// progress prints one line on stderr as each step starts: its number of
// the planned total, the time since the run began, and the command.
type progress struct {
	w     io.Writer
	now   func() time.Time
	start time.Time
	n     int // steps begun
	total int
}

func newProgress(w io.Writer, now func() time.Time) *progress {
	return &progress{w: w, now: now, start: now()}
}

func (p *progress) plan(total int) { p.total = total }

func (p *progress) prefix() string {
	d := p.now().Sub(p.start).Round(time.Second)
	return fmt.Sprintf("report: [%d/%d %02d:%02d]", p.n, p.total, int(d.Minutes()), int(d.Seconds())%60)
}

func (p *progress) step(what string) {
	p.n++
	fmt.Fprintf(p.w, "%s %s\n", p.prefix(), what)
}

func (p *progress) skip(what, why string) {
	p.n++
	fmt.Fprintf(p.w, "%s skipped: %s: %s\n", p.prefix(), what, why)
}

func (p *progress) done() {
	p.n = p.total
	fmt.Fprintf(p.w, "%s done\n", p.prefix())
}
