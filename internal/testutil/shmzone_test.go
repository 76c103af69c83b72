package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestShmZone(t *testing.T) {
	var fs unix.Statfs_t
	roomy := unix.Statfs(shmDir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC && int64(fs.Bavail)*fs.Bsize >= 4<<20
	var dir string
	t.Run("small", func(t *testing.T) {
		p := ShmZone(t, 1<<20)
		dir = filepath.Dir(p)
		if got := strings.HasPrefix(p, shmDir+"/"); got != roomy {
			t.Fatalf("ShmZone(1 MiB) = %q: in %s %v, want %v", p, shmDir, got, roomy)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("Stat(%q) = %v, want no file", p, err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("Stat of its directory = %v", err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the test, Stat(%q) = %v, want the directory removed", dir, err)
	}
	if p := ShmZone(t, 1<<60); strings.HasPrefix(p, shmDir+"/") {
		t.Errorf("ShmZone(1 EiB) = %q, want a path out of %s", p, shmDir)
	}
}
