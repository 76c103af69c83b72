package shm

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is the folder zone names resolve in when SHMZONE_DIR is unset.
const DefaultDir = "/dev/shm"

// Path resolves a zone name to a file path: a name holding a slash is a path
// and is returned as it is; any other name becomes NAME.zone in SHMZONE_DIR, or
// in DefaultDir when that is unset.
func Path(name string) string {
	if filepath.Base(name) != name || name == "." || name == ".." {
		return name
	}
	dir := os.Getenv("SHMZONE_DIR")
	if dir == "" {
		dir = DefaultDir
	}
	return filepath.Join(dir, name+".zone")
}

// Options says how to open or create a zone. The zero value attaches an
// existing zone read-write.
type Options struct {
	// Size creates the zone when the file is absent (or empty) and Size > 0. It
	// is rounded down to whole pages per shard. An existing zone keeps its size.
	Size int64
	// Shards is the shard count of a new zone, a power of two; 0 chooses one
	// from the size.
	Shards int
	// BytesPerSlot sizes a new zone's index: one slot per BytesPerSlot bytes of
	// shard. 0 means 64.
	BytesPerSlot int64
	// Perm is a new file's mode; 0 means 0600.
	Perm os.FileMode
	// ReadOnly maps the zone read-only and never creates it.
	ReadOnly bool
	// Layout names the layout of the shards; a zone of another layout is
	// refused with ErrVersion. 0 accepts any layout and creates none.
	Layout uint32
	// Format is called once, when the zone is created, to format its shards. It
	// runs before the header is written, under flock, so no other process sees
	// the zone before it returns.
	Format func(z *Zone) error
}

// Zone is an attached zone file.
type Zone struct {
	path     string
	data     []byte
	hdr      Header
	readOnly bool
	created  bool
	own      owner // the zone as a lock owner (owner.go)
}

// Open attaches the zone file at path, creating it when it is absent and
// o.Size > 0. It is safe to call from many processes at once: exactly one of
// them creates and formats the zone, and the others wait for it under flock.
//
// Errors: os.ErrNotExist (wrapped) when the file is absent and o.Size is 0;
// ErrNotRegular for a symlink or a directory; ErrNotZone, ErrVersion and
// ErrCorrupt for a file that fails validation; ErrNoSpace when the filesystem
// cannot back the size; ErrBadOptions for options that make no zone; and the
// os errors of open, such as a permission error.
func Open(path string, o Options) (*Zone, error) {
	if o.Size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrBadOptions, o.Size)
	}
	perm := o.Perm
	if perm == 0 {
		perm = 0o600
	}
	if perm&^os.ModePerm != 0 {
		return nil, fmt.Errorf("%w: mode %v has bits other than permissions", ErrBadOptions, perm)
	}
	create := o.Size > 0 && !o.ReadOnly
	// O_NONBLOCK: a read-only open of a FIFO would otherwise wait for a
	// writer before Fstat could refuse it. It changes nothing for a
	// regular file.
	flags := unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK
	switch {
	case o.ReadOnly:
		flags |= unix.O_RDONLY
	case create:
		flags |= unix.O_RDWR | unix.O_CREAT
	default:
		flags |= unix.O_RDWR
	}
	fd, err := unix.Open(path, flags, uint32(perm))
	if err != nil {
		return nil, openError(path, err)
	}
	defer unix.Close(fd)

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, path)
	}
	how := unix.LOCK_EX
	if o.ReadOnly {
		how = unix.LOCK_SH
	}
	if err := flock(fd, how); err != nil {
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}

	z := &Zone{path: path, readOnly: o.ReadOnly}
	if st.Size == 0 || (create && blankAt(fd, st.Size)) {
		if !create {
			return nil, fmt.Errorf("%w: %s is empty", ErrNotZone, path)
		}
		if err := z.create(fd, o); err != nil {
			return nil, err
		}
		return z, nil
	}
	page := make([]byte, HeaderSize)
	n, err := unix.Pread(fd, page, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	h, err := ParseHeader(page[:n], st.Size, o.Layout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := z.mmap(fd, h.Size); err != nil {
		return nil, err
	}
	z.hdr = h
	return z, nil
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: %s is a symlink", ErrNotRegular, path)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%w: %s is a directory", ErrNotRegular, path)
	case errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%w: %s is a socket or device", ErrNotRegular, path)
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// blankAt reports whether a file of size bytes has an all-zero header: a zone
// whose creator died before it finished (I1), which may be formatted anew.
func blankAt(fd int, size int64) bool {
	if size < int64(hdrSize) {
		return false
	}
	b := make([]byte, hdrSize)
	n, err := unix.Pread(fd, b, 0)
	return err == nil && n == hdrSize && isBlankHeader(b)
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

func (z *Zone) create(fd int, o Options) (err error) {
	h, err := Geometry(o.Size, o.Shards, o.BytesPerSlot)
	if err != nil {
		return err
	}
	h.Layout = o.Layout
	h.CreatedAt = time.Now().UnixMilli()
	var seed [8]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return fmt.Errorf("shm: seed: %w", err)
	}
	h.Seed = binary.LittleEndian.Uint64(seed[:])

	defer func() {
		if err != nil {
			z.unmap()
			unix.Ftruncate(fd, 0) // leave an empty file that the next Open may create anew
		}
	}()
	if err := unix.Ftruncate(fd, 0); err != nil {
		return &os.PathError{Op: "truncate", Path: z.path, Err: err}
	}
	if !roomFor(fd, h.Size) {
		return fmt.Errorf("%w: %s needs %d bytes, more than its filesystem has free", ErrNoSpace, z.path, h.Size)
	}
	if err := fallocate(fd, h.Size); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EFBIG) {
			return fmt.Errorf("%w: %s needs %d bytes: %v", ErrNoSpace, z.path, h.Size, err)
		}
		return &os.PathError{Op: "fallocate", Path: z.path, Err: err}
	}
	if err := z.mmap(fd, h.Size); err != nil {
		return err
	}
	z.hdr = h
	z.created = true
	if o.Format != nil {
		if err := o.Format(z); err != nil {
			return err
		}
	}
	encodeHeader(z.data, h) // I1: last
	return nil
}

func fallocate(fd int, size int64) error {
	for {
		err := unix.Fallocate(fd, 0, 0, size)
		switch err {
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP:
			// No fallocate here: extend and write every page so that the
			// filesystem allocates them now rather than at a fault.
			return fillZeros(fd, size)
		}
		return err
	}
}

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

func fillZeros(fd int, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
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

func (z *Zone) mmap(fd int, size int64) error {
	if size != int64(int(size)) {
		return fmt.Errorf("%w: size %d does not fit this address space", ErrBadOptions, size)
	}
	prot := unix.PROT_READ | unix.PROT_WRITE
	if z.readOnly {
		prot = unix.PROT_READ
	}
	b, err := unix.Mmap(fd, 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: z.path, Err: err}
	}
	z.data = b
	if err := z.attachOwner(fd); err != nil {
		z.unmap()
		return err
	}
	return nil
}

func (z *Zone) unmap() error {
	if z.data == nil {
		return nil
	}
	z.detachOwner()
	err := unix.Munmap(z.data)
	z.data = nil
	return err
}

// Close unmaps the zone. The file stays; every slice the zone returned becomes
// invalid. Close is idempotent.
func (z *Zone) Close() error {
	if err := z.unmap(); err != nil {
		return fmt.Errorf("shm: munmap %s: %w", z.path, err)
	}
	return nil
}

// Header returns the zone's validated header.
func (z *Zone) Header() Header { return z.hdr }

// Path returns the file the zone was opened from.
func (z *Zone) Path() string { return z.path }

// ReadOnly reports whether the zone is mapped read-only.
func (z *Zone) ReadOnly() bool { return z.readOnly }

// Created reports whether this Open created and formatted the zone.
func (z *Zone) Created() bool { return z.created }

// Shard returns shard i's bytes; they alias the mapping and are valid until
// Close. It panics when i is out of range, as slice indexing does.
func (z *Zone) Shard(i int) []byte {
	off := z.hdr.ShardOff + int64(i)*z.hdr.ShardSize
	return z.data[off : off+z.hdr.ShardSize : off+z.hdr.ShardSize]
}
