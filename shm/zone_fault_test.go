package shm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
	"golang.org/x/sys/unix"
)

// Tests of zones whose mapping cannot be backed: a sparse copy on a full
// tmpfs, and a file truncated while mapped. Each runs in a helper process,
// so that a fault that crashed it would show as the helper dying.

// runHelper runs a helper to its end and returns its stdout; it fails the
// test when the helper died of a signal or failed.
func runHelper(t *testing.T, args ...string) string {
	t.Helper()
	cmd := helperCommand(t, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("helper %v died of %v; said %q", args, ws.Signal(), out.String())
		}
	}
	if err != nil {
		t.Fatalf("helper %v: %v; said %q", args, err, out.String())
	}
	return out.String()
}

// fullTmpfs mounts a tmpfs of 1 MiB in a temporary directory, unmounted
// when the test ends.
func fullTmpfs(t *testing.T) string {
	t.Helper()
	testutil.NeedRoot(t, "mounts a small tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1M"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a file in dir until its filesystem is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, PageSize)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

func TestOpenSparseOnFullTmpfs(t *testing.T) {
	mnt := fullTmpfs(t)
	orig := tempZone(t)
	want := makeZone(t, orig)
	copy := filepath.Join(mnt, "copy.zone")
	if out, err := exec.Command("cp", "--sparse=always", orig, copy).CombinedOutput(); err != nil {
		t.Fatalf("cp --sparse=always: %v: %s", err, out)
	}
	var st unix.Stat_t
	if err := unix.Stat(copy, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 >= smallSize {
		t.Fatalf("the copy has %d blocks of 512 bytes for %d bytes: not sparse, the test would show nothing", st.Blocks, smallSize)
	}
	fill(t, mnt)

	out := runHelper(t, "sparse", copy)
	if !strings.Contains(out, "rw=ErrNoSpace") || !strings.Contains(out, "ro=ErrFault") {
		t.Fatalf("helper said %q; want rw=ErrNoSpace (attach cannot allocate) and ro=ErrFault (reading a hole faults)", out)
	}
	if !bytes.Equal(readFile(t, copy), want) {
		t.Fatalf("the sparse copy changed")
	}

	// With room made, attaching read-write allocates every block.
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	z := mustOpen(t, copy, Options{})
	if err := unix.Stat(copy, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 < smallSize {
		t.Fatalf("after a read-write attach the copy has %d blocks of 512 bytes, want %d bytes' worth", st.Blocks, smallSize)
	}
	if err := writeAll(z); err != nil {
		t.Fatalf("writing the allocated copy: %v", err)
	}
}

func TestTruncatedWhileMapped(t *testing.T) {
	path := tempZone(t)
	makeZone(t, path)
	out := runHelper(t, "truncated", path)
	if strings.TrimSpace(out) != "read=ErrFault write=ErrFault" {
		t.Fatalf("helper said %q, want read=ErrFault write=ErrFault", out)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open(truncated zone) = %v, want ErrCorrupt", err)
	}
}
