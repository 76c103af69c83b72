package shm

import "errors"

var (
	// ErrNotZone is returned when a file is not a zone: too small, empty, with
	// a wrong magic number, or a zone whose creation did not finish opened
	// without a size to finish it. Open never writes such a file.
	ErrNotZone = errors.New("shm: not a zone file")
	// ErrVersion is returned when a zone was written by another format version,
	// another byte order, or another layout of the layer above. The message
	// ends with what to do with such a zone: recreate it, or carry its data
	// over with shmctl dump and restore.
	ErrVersion = errors.New("shm: incompatible zone version")
	// ErrCorrupt is returned when a zone's header fails its checksum or its
	// geometry does not match the file.
	ErrCorrupt = errors.New("shm: corrupt zone")
	// ErrNotRegular is returned when the path names a symlink, a directory or
	// anything else that is not a regular file.
	ErrNotRegular = errors.New("shm: not a regular file")
	// ErrNoSpace is returned when the filesystem cannot back a zone of the
	// requested size, or every block of a sparse zone file being attached.
	ErrNoSpace = errors.New("shm: no space for zone")
	// ErrBadOptions is returned for a size, shard count or permission that
	// cannot make a zone.
	ErrBadOptions = errors.New("shm: bad options")
	// ErrNotOwner is returned when Open would create a zone in an existing
	// file that is not the caller's alone: owned by another user than the
	// effective uid, or writable by group or others beyond Options.Perm.
	ErrNotOwner = errors.New("shm: file not owned by this user alone")
	// ErrFault is returned when reading or writing a zone's mapping faulted:
	// the file was truncated while mapped, or its filesystem could not back
	// a page (a sparse file on a full tmpfs). See CatchFault.
	ErrFault = errors.New("shm: fault in zone mapping")
	// ErrLockTimeout is returned by LockWithin when a live owner held the
	// lock for the whole timeout; the lock is left as it was.
	ErrLockTimeout = errors.New("shm: lock wait timed out")
	// ErrNoSlot is returned by a read-write Open when every owner slot of
	// the zone is held: Slots zones are open read-write on the file already.
	ErrNoSlot = errors.New("shm: no free owner slot")
)
