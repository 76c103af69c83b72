package main

// serve_clock.go: the clock of -clock-file, a testing flag. Every child
// reads the same file, so a test moves the time of every child at once, and
// knows the time of each decision exactly.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// serveFileClock returns a dict.Options.Clock that reads the time from the
// file at path. The file holds Unix milliseconds as decimal text. The clock
// reads the file at each call. A test replaces the file with a rename, so
// that no read sees half a write. A read that fails returns the last time
// read.
//
// serveFileClock returns an error if the file cannot be read now, or holds
// no time.
func serveFileClock(path string) (func() int64, error) {
	read := func() (int64, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	ms, err := read()
	if err != nil {
		return nil, fmt.Errorf("-clock-file: %w", err)
	}
	var last atomic.Int64
	last.Store(ms)
	return func() int64 {
		if ms, err := read(); err == nil {
			last.Store(ms)
			return ms
		}
		return last.Load()
	}, nil
}
