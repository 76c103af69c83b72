package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is the directory that zone names resolve in when SHMZONE_DIR
// is unset.
const DefaultDir = "/dev/shm"

// Path resolves a zone name to a file path. A name that holds a slash is a
// path, and Path returns it as it is. It also returns "", "." and ".." as
// they are. Any other name becomes NAME.zone in the directory that
// SHMZONE_DIR names. If SHMZONE_DIR is unset or empty, the directory is
// DefaultDir.
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
	// Size is the size in bytes of a zone to create. Open creates the zone
	// if Size > 0 and the file is absent, empty or an unfinished creation.
	// Size is rounded down so that every shard is a whole number of pages:
	// a zone loses less than a page a shard. An existing zone keeps its size. A negative Size is
	// ErrBadOptions.
	Size int64
	// Shards is the shard count of a new zone, a power of two. 0 chooses
	// one from the size.
	Shards int
	// BytesPerSlot sizes a new zone's index, with one slot per
	// BytesPerSlot bytes of shard. 0 or less means 64.
	BytesPerSlot int64
	// Perm is a new zone's mode. It is set exactly, whatever the umask. 0
	// means 0600. Open does not create a zone in a file that group or
	// others may write, unless Perm lets them write it too. A Perm with
	// bits other than permissions is ErrBadOptions.
	Perm os.FileMode
	// ReadOnly maps the zone read-only. A read-only Open never creates a
	// zone.
	ReadOnly bool
	// Layout names the layout of the shards. Open refuses a zone of another
	// layout with ErrVersion. 0 accepts any layout, and a zone created
	// with it names none.
	Layout uint32
	// Format is called once, when the zone is created, to format its
	// shards. It runs under flock, before the header is written, so no
	// other process sees the zone before it returns. A fault in the mapping
	// during Format is an error wrapping ErrFault. An error fails the
	// creation.
	Format func(z *Zone) error
}

// Zone is an attached zone file. A Zone is safe for use by many
// goroutines, but Close must not race with other calls.
type Zone struct {
	path     string
	data     []byte
	hdr      Header
	readOnly bool
	created  bool
	own      owner   // the zone as a lock owner (owner.go)
	gen      *uint64 // the registry's generation word in data; nil when unmapped
}

// Open attaches the zone file at path. It creates the zone if o.Size > 0,
// o.ReadOnly is false, and the file is absent, empty or an unfinished
// creation. Many processes may call Open at once. Exactly one of them
// creates and formats the zone, and the others wait for it under flock.
//
// Open writes only a file that is empty, or that holds the marker of a
// creation this package began and did not finish. It finishes that
// creation. It leaves every other file that is not a zone as it is, even
// one whose first bytes are zero. A file it would create a zone in must
// belong to the caller's effective uid, root included. No one else may
// write it, unless o.Perm allows it. Attaching an existing zone read-write
// allocates every block of the file, so that a sparse copy cannot fault
// later.
//
// An Open that does not create may find the file empty. A creator may
// have made the file and not yet locked it. Open then opens the path again
// for up to 100ms, and attaches the zone once a creator has begun it.
//
// A creation that fails removes the file if this call made it. It leaves
// any other file as it found it.
//
// Open returns an error wrapping os.ErrNotExist if the file is absent and
// Open may not create it. It returns ErrNotRegular for a file that is not
// regular. It returns ErrNotZone, ErrVersion or ErrCorrupt for a file that
// fails validation, and ErrNotZone for a file still empty after the wait.
// It returns ErrNotOwner for a file it may not create a zone in, and
// ErrNoSpace if the filesystem cannot back the zone. It returns ErrNoSlot
// if every owner slot is held, ErrBadOptions for options that make no
// zone, and the error of Format. It also returns the os errors of open,
// such as a permission error. It fails if other processes keep replacing
// the file while it opens it.
func Open(path string, o Options) (*Zone, error) {
	if o.Size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrBadOptions, o.Size)
	}
	if o.Perm == 0 {
		o.Perm = 0o600
	}
	if o.Perm&^os.ModePerm != 0 {
		return nil, fmt.Errorf("%w: mode %v has bits other than permissions", ErrBadOptions, o.Perm)
	}
	replaced, waited := 0, time.Duration(0)
	for {
		z, err := open(path, o)
		switch err {
		case errEmpty:
			if waited >= emptyWait {
				return nil, fmt.Errorf("%w: %s is empty, and no creator began a zone in it within %v", ErrNotZone, path, emptyWait)
			}
			d := min(max(waited, emptyPoll), emptyWait-waited) // 1, 1, 2, 4 … ms
			sleepEmpty(d)
			waited += d
		case errReplaced:
			replaced++
			if replaced > maxReplaced {
				return nil, fmt.Errorf("shm: %s was replaced %d times while it was being opened", path, replaced)
			}
		default:
			return z, err
		}
	}
}

// errEmpty says an Open that does not create found the file empty. A
// creator makes its file with O_CREAT and locks it next, so the file may be
// a zone about to be created: Open waits emptyWait in all, polling from
// emptyPoll, for a creator to lock it, and then refuses it.
var errEmpty = errors.New("shm: file empty")

const (
	emptyWait = 100 * time.Millisecond
	emptyPoll = time.Millisecond
)

// sleepEmpty is time.Sleep; tests replace it to act out a creator that
// locks the file while Open waits, or to count the wait without taking it.
var sleepEmpty = time.Sleep

// errReplaced says the path no longer names the file open locked: another
// process removed or replaced it meanwhile (a creation that failed removes
// its file). Open then opens the path again, up to maxReplaced times.
var errReplaced = errors.New("shm: file replaced")

const maxReplaced = 100

func open(path string, o Options) (*Zone, error) {
	create := o.Size > 0 && !o.ReadOnly
	fd, made, err := openFile(path, o.ReadOnly, create, o.Perm)
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
	if !namesFile(path, &st) {
		return nil, errReplaced
	}

	z := &Zone{path: path, readOnly: o.ReadOnly}
	if st.Size == 0 {
		if !create {
			return nil, errEmpty
		}
		if err := z.create(fd, o, &st, made); err != nil {
			return nil, err
		}
		return z, nil
	}
	page := make([]byte, HeaderSize)
	n, err := unix.Pread(fd, page, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if isMarker(page[:n], st.Size) {
		if !create {
			return nil, fmt.Errorf("%w: %s is a zone whose creation did not finish; open it with a size to finish it", ErrNotZone, path)
		}
		if err := z.create(fd, o, &st, false); err != nil {
			return nil, err
		}
		return z, nil
	}
	h, err := parseHeader(page[:n], st.Size, o.Layout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !o.ReadOnly {
		if err := allocate(fd, &st, h.Size); err != nil {
			return nil, attachError(path, h.Size, err)
		}
	}
	if err := z.mmap(fd, h.Size); err != nil {
		return nil, err
	}
	z.hdr = h
	return z, nil
}

// openFile opens path; made reports that this call created the file. A
// creating open first tries O_EXCL, so that it knows whether the file is its
// own to remove should the creation fail.
func openFile(path string, readOnly, create bool, perm os.FileMode) (fd int, made bool, err error) {
	// O_NONBLOCK: a read-only open of a FIFO would otherwise wait for a
	// writer before Fstat could refuse it. It changes nothing for a
	// regular file.
	flags := unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_RDWR
	if readOnly {
		flags = flags&^unix.O_RDWR | unix.O_RDONLY
	}
	for {
		if create {
			fd, err := unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL, uint32(perm))
			if err != unix.EEXIST {
				return fd, err == nil, err
			}
		}
		fd, err := unix.Open(path, flags, 0)
		if err == unix.ENOENT && create {
			continue // removed since O_EXCL found it: create it
		}
		return fd, false, err
	}
}

// namesFile reports whether path still names the file st describes.
func namesFile(path string, st *unix.Stat_t) bool {
	var now unix.Stat_t
	return unix.Lstat(path, &now) == nil && now.Dev == st.Dev && now.Ino == st.Ino
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

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
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
	z.gen = word64(b, regGenOff)
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
	z.data, z.gen = nil, nil
	return err
}

// Close unmaps the zone and releases its owner slot. The file stays. Every
// slice the zone returned becomes invalid. Close is idempotent.
func (z *Zone) Close() error {
	if err := z.unmap(); err != nil {
		return fmt.Errorf("shm: munmap %s: %w", z.path, err)
	}
	return nil
}

// Header returns the zone's validated header.
func (z *Zone) Header() Header { return z.hdr }

// Path returns the path the zone was opened from.
func (z *Zone) Path() string { return z.path }

// ReadOnly reports whether the zone is mapped read-only.
func (z *Zone) ReadOnly() bool { return z.readOnly }

// Created reports whether this Open created and formatted the zone.
func (z *Zone) Created() bool { return z.created }

// Shard returns shard i's bytes. They alias the mapping, and are valid
// until Close. Shard panics if i is out of range, as slice indexing does.
func (z *Zone) Shard(i int) []byte {
	off := z.hdr.ShardOff + int64(i)*z.hdr.ShardSize
	return z.data[off : off+z.hdr.ShardSize : off+z.hdr.ShardSize]
}
