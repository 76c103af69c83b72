package shm

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Tests of an Open that does not create and finds the file empty: the file
// a creator's O_CREAT made before its flock. sleepEmpty is swapped so that
// the creator acts during the wait, or so that the wait is counted rather
// than taken.

// withSleepEmpty makes sleepEmpty f until the test ends.
func withSleepEmpty(t *testing.T, f func(time.Duration)) {
	t.Helper()
	old := sleepEmpty
	sleepEmpty = f
	t.Cleanup(func() { sleepEmpty = old })
}

// attachModes are the Opens that never create.
var attachModes = []struct {
	name string
	o    Options
}{
	{"attach", Options{}},
	{"readonly", Options{ReadOnly: true}},
	{"readonly with size", Options{ReadOnly: true, Size: smallSize}},
}

func TestAttachEmptyFileWaitsForItsCreator(t *testing.T) {
	for _, m := range attachModes {
		o := m.o
		t.Run(m.name, func(t *testing.T) {
			path := tempZone(t)
			if err := os.WriteFile(path, nil, 0o600); err != nil { // a creator's O_CREAT, before its flock
				t.Fatal(err)
			}
			var creator *Zone
			withSleepEmpty(t, func(time.Duration) {
				if creator == nil { // the creator takes its flock and creates the zone
					creator = mustOpen(t, path, small)
				}
			})
			z, err := Open(path, o)
			if err != nil {
				t.Fatalf("Open(empty, %s) while its creator creates it = %v, want the zone attached", m.name, err)
			}
			defer z.Close()
			if creator == nil {
				t.Fatalf("Open(empty, %s) did not wait", m.name)
			}
			if z.Created() || z.Header() != creator.Header() {
				t.Fatalf("Open(empty, %s) = Created %v, Header %+v; want false, the creator's %+v", m.name, z.Created(), z.Header(), creator.Header())
			}
		})
	}
}

func TestAttachEmptyFileRefusedAfterWait(t *testing.T) {
	for _, m := range attachModes {
		o := m.o
		t.Run(m.name, func(t *testing.T) {
			path := tempZone(t)
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var waited time.Duration
			withSleepEmpty(t, func(d time.Duration) { waited += d })
			_, err := Open(path, o)
			if !errors.Is(err, ErrNotZone) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open(empty, %s) = %v, want ErrNotZone naming %s", m.name, err, path)
			}
			if waited != emptyWait {
				t.Fatalf("Open(empty, %s) waited %v, want %v", m.name, waited, emptyWait)
			}
			if b := readFile(t, path); len(b) != 0 {
				t.Fatalf("Open(empty, %s) wrote %d bytes", m.name, len(b))
			}
		})
	}
}
