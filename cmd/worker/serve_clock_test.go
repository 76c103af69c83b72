package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The -clock-file clock reads the file at each call, and keeps the last
// time it read while the file is missing or holds no time.
func TestServeFileClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	if _, err := serveFileClock(path); err == nil {
		t.Fatal("serveFileClock(a missing file) = nil error")
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("soon")
	if _, err := serveFileClock(path); err == nil {
		t.Fatal(`serveFileClock(a file of "soon") = nil error`)
	}
	write("1700000000000\n")
	clock, err := serveFileClock(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		remove     bool
		want       int64
	}{
		{"first", "", false, 1700000000000},
		{"moved", "1700000000250", false, 1700000000250},
		{"any number", "17000", false, 17000},
		{"no time", "x", false, 17000},
		{"removed", "", true, 17000},
		{"back", "1700000001000\n", false, 1700000001000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.remove:
				os.Remove(path)
			case tc.text != "":
				write(tc.text)
			}
			if got := clock(); got != tc.want {
				t.Errorf("clock() = %d, want %d", got, tc.want)
			}
		})
	}
}
