package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// readyRE matches prefork's report of a child that accepts: its pid and
// its slot.
var readyRE = regexp.MustCompile(`^child pid=(\d+) ready \(slot (\d+)\)$`)

// readiness is the master's Logf. It writes each report to w as a line.
// Once every slot has had a child ready, it writes "ready children=" and
// their pids, by slot, comma-separated. That line comes once.
type readiness struct {
	mu   sync.Mutex
	w    io.Writer
	pids []int // by slot: the last child ready in it, or 0
	told bool  // the ready line is written
}

func newReadiness(w io.Writer, children int) *readiness {
	return &readiness{w: w, pids: make([]int, children)}
}

func (r *readiness) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.w, line)
	m := readyRE.FindStringSubmatch(line)
	if m == nil || r.told {
		return
	}
	pid, _ := strconv.Atoi(m[1])
	slot, err := strconv.Atoi(m[2])
	if err != nil || slot < 0 || slot >= len(r.pids) {
		return
	}
	r.pids[slot] = pid
	ps := make([]string, len(r.pids))
	for i, p := range r.pids {
		if p == 0 {
			return
		}
		ps[i] = strconv.Itoa(p)
	}
	r.told = true
	fmt.Fprintf(r.w, "ready children=%s\n", strings.Join(ps, ","))
}
