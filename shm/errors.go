package shm

import "errors"

var (
	// ErrNotZone is returned for a file that is not a zone. The file is too
	// small, empty, or has a wrong magic number. Or it holds an unfinished
	// creation, and Open had no size to finish it. Open does not write such
	// a file.
	ErrNotZone = errors.New("shm: not a zone file")
	// ErrVersion is returned for a zone of another format version, another
	// byte order or another layout of the layer above. The message ends
	// with what to do with such a zone. Recreate it, or carry its data over
	// with shmctl dump and restore.
	ErrVersion = errors.New("shm: incompatible zone version")
	// ErrCorrupt is returned when a zone's header fails its checksum, or
	// when its geometry does not match the file.
	ErrCorrupt = errors.New("shm: corrupt zone")
	// ErrNotRegular is returned when the path names a symlink, a directory
	// or anything else that is not a regular file.
	ErrNotRegular = errors.New("shm: not a regular file")
	// ErrNoSpace is returned when the filesystem cannot back a zone of the
	// requested size. It is also returned when the filesystem cannot back
	// every block of a sparse zone file that Open attaches read-write.
	ErrNoSpace = errors.New("shm: no space for zone")
	// ErrBadOptions is returned for a size, shard count or permission that
	// cannot make a zone.
	ErrBadOptions = errors.New("shm: bad options")
	// ErrNotOwner is returned when Open would create a zone in an existing
	// file that is not the caller's alone. Another user than the effective
	// uid owns it, or group or others may write it beyond Options.Perm.
	ErrNotOwner = errors.New("shm: file not owned by this user alone")
	// ErrFault is returned when a read or write of a zone's mapping
	// faulted. The file was truncated while mapped, or its filesystem could
	// not back a page, as with a sparse file on a full tmpfs. See
	// CatchFault.
	ErrFault = errors.New("shm: fault in zone mapping")
	// ErrLockTimeout is returned by LockWithin and its counted and asking
	// forms when a live owner held the lock for the whole timeout. The lock
	// is left as it was.
	ErrLockTimeout = errors.New("shm: lock wait timed out")
	// ErrNoSlot is returned by a read-write Open when every owner slot of
	// the zone is held. Slots zones are then open read-write on the file.
	ErrNoSlot = errors.New("shm: no free owner slot")
	// ErrReadOnly is returned when a change of the registry is asked of a
	// zone opened read-only.
	ErrReadOnly = errors.New("shm: zone is read-only")
	// ErrRegistryFull is returned by StoreRecord when every record of the
	// registry holds another key.
	ErrRegistryFull = errors.New("shm: registry full")
)
