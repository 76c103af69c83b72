package shm

import "errors"

var (
	// ErrNotZone is returned when a file is not a zone: too small, empty, or
	// with a wrong magic number.
	ErrNotZone = errors.New("shm: not a zone file")
	// ErrVersion is returned when a zone was written by another format version,
	// another byte order, or another layout of the layer above.
	ErrVersion = errors.New("shm: incompatible zone version")
	// ErrCorrupt is returned when a zone's header fails its checksum or its
	// geometry does not match the file.
	ErrCorrupt = errors.New("shm: corrupt zone")
	// ErrNotRegular is returned when the path names a symlink, a directory or
	// anything else that is not a regular file.
	ErrNotRegular = errors.New("shm: not a regular file")
	// ErrNoSpace is returned when the filesystem cannot back a zone of the
	// requested size.
	ErrNoSpace = errors.New("shm: no space for zone")
	// ErrBadOptions is returned for a size, shard count or permission that
	// cannot make a zone.
	ErrBadOptions = errors.New("shm: bad options")
	// ErrLockTimeout is returned by LockWithin when a live owner held the
	// lock for the whole timeout; the lock is left as it was.
	ErrLockTimeout = errors.New("shm: lock wait timed out")
	// ErrNoSlot is returned by a read-write Open when every owner slot of
	// the zone is held: Slots zones are open read-write on the file already.
	ErrNoSlot = errors.New("shm: no free owner slot")
)
