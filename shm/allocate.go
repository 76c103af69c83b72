package shm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// allocate makes sure every block of an existing zone file is allocated, so
// that no page of the mapping faults for lack of backing store (I3): a
// sparse copy of a zone has holes. A file whose blocks already cover its
// size is left alone; fallocate neither changes its size nor its bytes.
func allocate(fd int, st *unix.Stat_t, size int64) error {
	if st.Blocks*512 >= size {
		return nil
	}
	if err := fallocateAll(fd, size); err != unix.EOPNOTSUPP {
		return err
	}
	return nil // no way to allocate here; a fault becomes ErrFault
}

func attachError(path string, size int64, err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("%w: %s is sparse and its filesystem cannot back its %d bytes: %v", ErrNoSpace, path, size, err)
	}
	return &os.PathError{Op: "fallocate", Path: path, Err: err}
}

// isNoSpace reports whether err, from fallocate or a write, says the
// filesystem cannot back the bytes asked for: it is full, the caller's
// quota is spent, or the file would pass its largest size. Open returns
// ErrNoSpace for each, creating or attaching.
func isNoSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG)
}

// fallocate allocates the blocks of a file being created, whose first
// hdrSize bytes hold the creator's marker (I1).
func fallocate(fd int, size int64) error {
	if err := fallocateAll(fd, size); err != unix.EOPNOTSUPP {
		return err
	}
	// No fallocate here (ext2, ext3, NFSv3): extend and write every page
	// after the marker so that the filesystem allocates them now rather than
	// at a fault. The marker stays, so that a creator that dies from here on
	// still leaves a file the next creating Open finishes (I1).
	return fillZeros(fd, int64(hdrSize), size)
}

// fallocateAll allocates the blocks of fd's first size bytes, retrying
// when a signal interrupts it.
func fallocateAll(fd int, size int64) error {
	for {
		if err := sysFallocate(fd, 0, 0, size); err != unix.EINTR {
			return err
		}
	}
}

// sysFallocate is unix.Fallocate; tests replace it to act out filesystems
// that have no fallocate (EOPNOTSUPP) or whose quota is spent (EDQUOT).
var sysFallocate = unix.Fallocate

// roomFor reports whether the filesystem of fd may have size bytes free. A
// fallocate that cannot succeed would first take every free block (ext4,
// tmpfs) and make other writers fail until it gives them back, so a size
// above the free blocks is refused before. A filesystem that counts no
// blocks (tmpfs without a size limit) is given the benefit of the doubt.
func roomFor(fd int, size int64) bool {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil || fs.Blocks == 0 {
		return true
	}
	unit := uint64(fs.Frsize)
	if unit == 0 {
		unit = uint64(fs.Bsize)
	}
	return uint64(size)/unit <= fs.Bavail
}

// fillZeros writes zeros over fd's bytes [from, size).
func fillZeros(fd int, from, size int64) error {
	buf := make([]byte, 1<<20)
	for off := from; off < size; {
		n := int64(len(buf))
		if size-off < n {
			n = size - off
		}
		w, err := unix.Pwrite(fd, buf[:n], off)
		if err != nil {
			return err
		}
		off += int64(w)
	}
	return nil
}
