package shmfiber_test

import (
	"path/filepath"
	"testing"

	"github.com/shmzone/shmzone/dict"
)

// openZone opens a fresh zone of 1 MiB in a temporary directory, closed
// when the test ends; clock, when not nil, is its clock (Unix ms).
func openZone(t testing.TB, clock func() int64) *dict.Dict {
	t.Helper()
	d, err := dict.Open(filepath.Join(t.TempDir(), "test.zone"), dict.Options{Size: 1 << 20, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
