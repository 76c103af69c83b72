// Package zonetest opens the zones of tests outside package dict: on a fake
// clock, in a temporary directory, and checked and closed when the test
// ends, so that a test says only what is particular to it.
//
//	d, clk := zonetest.Open(t, dict.Options{})
//	…
//	clk.Advance(time.Second)
//
// The test then fails if the zone is not sound when it ends (dict's Check).
// A test that closes the Dict itself is not checked again; a test that
// breaks the zone on purpose opens it with OpenUnchecked.
//
// Package dict's in-package tests cannot import this package (it imports
// dict); they have their own opener, openTest in dict/helpers_test.go.
// Examples do not use it either: an Example shows what a user writes.
package zonetest

import (
	"errors"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// DefaultSize is the size of the zones that Open creates when o.Size is 0.
const DefaultSize = 1 << 20

// Open creates a zone in a directory of the test's, with Options o. It
// returns the zone and its clock. The clock is a new testutil.Clock, or
// nil when o.Clock is set. A zero o.Size is DefaultSize. When the test
// ends, the zone is checked and the Dict closed. A Check error fails the
// test.
func Open(t testing.TB, o dict.Options) (*dict.Dict, *testutil.Clock) {
	t.Helper()
	return OpenAt(t, testutil.TempZone(t), o)
}

// OpenAt is Open of the zone file at path. It creates the file if it does
// not exist. Otherwise it attaches the zone and keeps its size. It is for
// a test that opens one zone twice or hands its path to another process.
func OpenAt(t testing.TB, path string, o dict.Options) (*dict.Dict, *testutil.Clock) {
	t.Helper()
	d, clk := open(t, path, o)
	t.Cleanup(func() {
		if err := d.Check(); err != nil && !errors.Is(err, dict.ErrClosed) {
			t.Errorf("zonetest: Check() of %s when the test ended = %v", path, err)
		}
		d.Close()
	})
	return d, clk
}

// OpenUnchecked is Open without the Check when the test ends. It is for a
// test that leaves the zone broken on purpose. The zone may be corrupted,
// truncated, or locked by a process the test killed.
func OpenUnchecked(t testing.TB, o dict.Options) (*dict.Dict, *testutil.Clock) {
	t.Helper()
	d, clk := open(t, testutil.TempZone(t), o)
	t.Cleanup(func() { d.Close() })
	return d, clk
}

func open(t testing.TB, path string, o dict.Options) (*dict.Dict, *testutil.Clock) {
	t.Helper()
	var clk *testutil.Clock
	if o.Clock == nil {
		clk = new(testutil.Clock)
		o.Clock = clk.UnixMilli
	}
	if o.Size == 0 {
		o.Size = DefaultSize
	}
	d, err := dict.Open(path, o)
	if err != nil {
		t.Fatalf("zonetest: dict.Open(%s, %+v) = %v", path, o, err)
	}
	return d, clk
}
