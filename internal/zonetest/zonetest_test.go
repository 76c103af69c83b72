package zonetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// recorder is a testing.TB whose cleanups and errors the test runs and
// reads itself.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// end runs the cleanups, last registered first, as a test's end does.
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestOpen: a zone of DefaultSize in the test's directory, on a Clock that
// starts at testutil.Epoch and is the zone's; closed at the end.
func TestOpen(t *testing.T) {
	r := &recorder{TB: t}
	d, clk := Open(r, dict.Options{})
	if d.Size() != DefaultSize {
		t.Errorf("Size() = %d, want %d", d.Size(), DefaultSize)
	}
	if d.Now() != testutil.EpochMilli {
		t.Errorf("Now() = %d, want testutil.EpochMilli %d", d.Now(), testutil.EpochMilli)
	}
	clk.Advance(time.Second)
	if d.Now() != testutil.EpochMilli+1000 {
		t.Errorf("Now() after the clock advanced 1s = %d, want %d", d.Now(), testutil.EpochMilli+1000)
	}
	if _, err := d.Set("k", dict.Int(1), time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	r.end()
	if len(r.errs) != 0 {
		t.Errorf("a sound zone failed the test: %q", r.errs)
	}
	if err := d.Err(); err != dict.ErrClosed {
		t.Errorf("Err() after the test ended = %v, want ErrClosed", err)
	}
}

// TestOpenOwnClock: Options.Clock set is the zone's clock, and Open returns
// no Clock.
func TestOpenOwnClock(t *testing.T) {
	d, clk := Open(t, dict.Options{Size: 256 << 10, Clock: func() int64 { return 42 }})
	if clk != nil || d.Now() != 42 || d.Size() != 256<<10 {
		t.Errorf("Open with Clock and Size: clock %v, Now() %d, Size() %d; want nil, 42, %d", clk, d.Now(), d.Size(), 256<<10)
	}
}

// TestOpenAtShared: two OpenAt of one path are one zone.
func TestOpenAtShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.zone")
	a, _ := OpenAt(t, path, dict.Options{})
	b, _ := OpenAt(t, path, dict.Options{})
	if _, err := a.Set("k", dict.Int(7), 0, 0); err != nil {
		t.Fatal(err)
	}
	if v, _, err := b.Get("k"); err != nil || v.Int() != 7 {
		t.Errorf("Get through the second Dict = %v, %v; want 7", v, err)
	}
}

// TestClosedNotChecked: a Dict the test closed fails nothing at the end.
func TestClosedNotChecked(t *testing.T) {
	r := &recorder{TB: t}
	d, _ := Open(r, dict.Options{})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r.end()
	if len(r.errs) != 0 {
		t.Errorf("a Dict the test closed failed it: %q", r.errs)
	}
}

// TestCorruptFails: a zone that is not sound when the test ends fails the
// test; one opened with OpenUnchecked does not.
func TestCorruptFails(t *testing.T) {
	for _, unchecked := range []bool{false, true} {
		t.Run(fmt.Sprintf("unchecked=%v", unchecked), func(t *testing.T) {
			r := &recorder{TB: t}
			open := Open
			if unchecked {
				open = OpenUnchecked
			}
			d, _ := open(r, dict.Options{Size: 256 << 10, Shards: 1})
			for i := range 100 {
				if _, err := d.Set(fmt.Sprint("key", i), dict.Int(int64(i)), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			corrupt(t, d.Path())
			r.end()
			if unchecked && len(r.errs) != 0 {
				t.Errorf("OpenUnchecked: a corrupt zone failed the test: %q", r.errs)
			}
			if !unchecked && len(r.errs) != 1 {
				t.Errorf("Open: a corrupt zone gave %d errors, want 1: %q", len(r.errs), r.errs)
			}
		})
	}
}

// corrupt writes junk over a word of the zone file's second page: in a
// zone of one shard, some of the shard's index buckets, which Check finds
// invalid.
func corrupt(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5}, 8192); err != nil {
		t.Fatal(err)
	}
}
