package shm

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Tests of creation on filesystems whose fallocate fails: none at all
// (EOPNOTSUPP: ext2, ext3, NFSv3), or a spent quota (EDQUOT). sysFallocate
// is swapped to act them out on any filesystem.

// fallocateFails returns a stand-in for unix.Fallocate that fails with errno.
func fallocateFails(errno syscall.Errno) func(fd int, mode uint32, off, size int64) error {
	return func(int, uint32, int64, int64) error { return errno }
}

// withFallocate makes sysFallocate f until the test ends.
func withFallocate(t *testing.T, f func(fd int, mode uint32, off, size int64) error) {
	t.Helper()
	old := sysFallocate
	sysFallocate = f
	t.Cleanup(func() { sysFallocate = old })
}

// Without fallocate, creation writes zeros after the marker, not over it:
// Format sees the marker, and the zone is whole, every block written.
func TestCreateWithoutFallocateKeepsMarker(t *testing.T) {
	withFallocate(t, fallocateFails(unix.EOPNOTSUPP))
	path := tempZone(t)
	o := small
	o.Format = func(z *Zone) error {
		if !isMarker(z.data, int64(len(z.data))) {
			t.Errorf("Format: the header holds %.8q, want the marker of an unfinished creation (I1)", z.data)
		}
		return nil
	}
	z := mustOpen(t, path, o)
	if !z.Created() || z.Header().Size != smallSize {
		t.Fatalf("Open(absent, Size) without fallocate = Created %v, Size %d; want true, %d", z.Created(), z.Header().Size, smallSize)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != smallSize || st.Blocks*512 < smallSize {
		t.Fatalf("zone created without fallocate: size %d, %d blocks of 512 bytes; want %d bytes, all allocated", st.Size, st.Blocks, smallSize)
	}
	mustOpen(t, path, Options{})
}

// I1 without fallocate: a creator killed in Format leaves its marker, and
// the next Open with a size finishes the zone.
func TestCreatorDiedWithoutFallocateLeavesMarker(t *testing.T) {
	withFallocate(t, fallocateFails(unix.EOPNOTSUPP))
	path := tempZone(t)
	cmd := helperCommand(t, "die-in-format", path, "nofallocate")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err == nil || !strings.Contains(out.String(), "formatting") {
		t.Fatalf("helper: %v, said %q; want it killed while formatting", err, out.String())
	}
	data := readFile(t, path)
	if !isMarker(data, int64(len(data))) {
		t.Fatalf("a creator killed without fallocate left %.8q, want its marker (I1)", data)
	}
	z := mustOpen(t, path, small)
	if !z.Created() {
		t.Fatalf("Open(killed creation, Size).Created() = false, want true")
	}
	if string(z.Shard(0)[:4]) == "half" {
		t.Fatalf("finished zone keeps the killed formatter's bytes")
	}
}

// Without fallocate, a Format that fails in an unfinished creation leaves
// the marker alone, which a later Open finishes.
func TestFailedFormatWithoutFallocateLeavesMarker(t *testing.T) {
	withFallocate(t, fallocateFails(unix.EOPNOTSUPP))
	path := tempZone(t)
	if err := os.WriteFile(path, marker(smallSize, 0xa5), 0o600); err != nil {
		t.Fatal(err)
	}
	errFormat := errors.New("format failed")
	o := small
	o.Format = func(*Zone) error { return errFormat }
	if _, err := Open(path, o); !errors.Is(err, errFormat) {
		t.Fatalf("Open(unfinished, failing Format) = %v, want %v", err, errFormat)
	}
	data := readFile(t, path)
	if len(data) != hdrSize || !isMarker(data, int64(len(data))) {
		t.Fatalf("after a failed Format without fallocate the file holds %d bytes %.8q, want the marker alone", len(data), data)
	}
	if z := mustOpen(t, path, small); !z.Created() {
		t.Fatalf("Open(marker, Size).Created() = false, want true")
	}
}

// A creation over quota is ErrNoSpace, as Open documents and as attaching
// a sparse zone over quota is; the file it made is removed.
func TestCreateOverQuotaIsErrNoSpace(t *testing.T) {
	withFallocate(t, fallocateFails(unix.EDQUOT))
	path := tempZone(t)
	if _, err := Open(path, small); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Open(absent, Size) with fallocate failing EDQUOT = %v, want ErrNoSpace", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed Open left the file it created: Lstat = %v", err)
	}
}
