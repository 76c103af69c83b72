package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// shmDir is where servers keep zones: a tmpfs.
const shmDir = "/dev/shm"

// ShmZone returns the path of a zone file of size bytes that does not
// exist yet, in a directory of /dev/shm, where servers keep their zones.
// A test whose processes must not wait on the disk uses it. A page of a
// file on a disk filesystem can be written back and dropped from memory,
// and a process that touches it again waits for the disk. ShmZone falls
// back to TempZone when /dev/shm is no tmpfs or has less than four times
// size free, as a container's 64 MiB. The directory is removed when the
// test ends.
func ShmZone(t testing.TB, size int64) string {
	t.Helper()
	var fs unix.Statfs_t
	if unix.Statfs(shmDir, &fs) != nil || fs.Type != unix.TMPFS_MAGIC || int64(fs.Bavail)*fs.Bsize < 4*size {
		return TempZone(t)
	}
	dir, err := os.MkdirTemp(shmDir, "shmzone-test-")
	if err != nil {
		return TempZone(t)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "test.zone")
}
