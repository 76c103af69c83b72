package shm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestHugePages mounts a tmpfs of its own, as /dev/shm is one, with each
// of its huge= settings. A zone on a tmpfs that allows huge pages on advice
// is mapped with them. One on a tmpfs that allows none opens and works the
// same.
func TestHugePages(t *testing.T) {
	testutil.NeedRoot(t, "mounts a tmpfs")
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skipf("the kernel has no transparent huge pages: %v", err)
	}
	for _, tt := range []struct {
		huge string
		want bool // some of the zone is mapped with huge pages
	}{
		{"never", false},
		{"advise", true},
		{"within_size", true},
	} {
		t.Run("huge="+tt.huge, func(t *testing.T) {
			dir := t.TempDir()
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,huge="+tt.huge); err != nil {
				t.Fatalf("mount a tmpfs with huge=%s: %v", tt.huge, err)
			}
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
			path := filepath.Join(dir, "huge.zone")
			z := mustOpen(t, path, Options{Size: 16 << 20, Shards: 2})
			for i := 0; i < len(z.data); i += PageSize {
				_ = z.data[i] // fault every page in
			}
			kb, err := pmdMapped(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := kb > 0; got != tt.want {
				t.Fatalf("%d KiB of the zone mapped with huge pages on a tmpfs with huge=%s; want some: %v", kb, tt.huge, tt.want)
			}
			t.Logf("huge=%s: %d KiB of %d mapped with huge pages", tt.huge, kb, len(z.data)>>10)
		})
	}
}

// pmdMapped returns how many KiB of this process's mappings of path are
// mapped with huge pages, from /proc/self/smaps.
func pmdMapped(path string) (int, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	kb, in, seen := 0, false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			in = len(f) >= 6 && f[5] == path
			seen = seen || in
		case in && len(f) == 3 && (f[0] == "ShmemPmdMapped:" || f[0] == "FilePmdMapped:"):
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, fmt.Errorf("smaps: %q: %v", sc.Text(), err)
			}
			kb += n
		}
	}
	if !seen {
		return 0, fmt.Errorf("smaps: no mapping of %s", path)
	}
	return kb, sc.Err()
}
