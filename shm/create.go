package shm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// create formats a zone in the file fd, which is empty, or holds the marker
// of a creation that did not finish; made says this call created the file.
// It first writes its own marker (I1), so that the file is recognisably one
// this package began to create from its first byte to the header's write.
// On failure it removes the file when made, and otherwise leaves it as it
// was found: empty, or a marker that a later Open may finish.
func (z *Zone) create(fd int, o Options, st *unix.Stat_t, made bool) (err error) {
	empty, wrote := st.Size == 0, false
	defer func() {
		if err == nil {
			return
		}
		z.unmap()
		switch {
		case made:
			if namesFile(z.path, st) {
				unix.Unlink(z.path) // under flock: a waiter finds the path gone and opens it anew
			}
		case !wrote:
		case empty:
			unix.Ftruncate(fd, 0)
			unix.Fchmod(fd, st.Mode&0o7777)
		default:
			unix.Ftruncate(fd, int64(hdrSize)) // the marker alone
			unix.Fchmod(fd, st.Mode&0o7777)
		}
	}()
	if err := mayCreateIn(z.path, st, o.Perm); err != nil {
		return err
	}
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

	// Cut an earlier creator's blocks, keeping its marker, then replace the
	// marker with this creation's: the file is never larger than the size
	// its marker names.
	wrote = true
	if !empty {
		if err := unix.Ftruncate(fd, int64(hdrSize)); err != nil {
			return &os.PathError{Op: "truncate", Path: z.path, Err: err}
		}
	}
	mark := make([]byte, hdrSize)
	encodeMarker(mark, h)
	if _, err := unix.Pwrite(fd, mark, 0); err != nil {
		return &os.PathError{Op: "write", Path: z.path, Err: err}
	}
	if err := unix.Fchmod(fd, uint32(o.Perm)); err != nil {
		return &os.PathError{Op: "chmod", Path: z.path, Err: err}
	}
	if !roomFor(fd, h.Size) {
		return fmt.Errorf("%w: %s needs %d bytes, more than its filesystem has free", ErrNoSpace, z.path, h.Size)
	}
	if err := fallocate(fd, h.Size); err != nil {
		if isNoSpace(err) {
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
		if err := z.format(o.Format); err != nil {
			return err
		}
	}
	encodeHeader(z.data, h) // I1: last
	return nil
}

// format runs fn, turning a fault in the mapping into an error.
func (z *Zone) format(fn func(z *Zone) error) (err error) {
	defer CatchFault(&err, GuardFaults())
	return fn(z)
}

// mayCreateIn refuses to create a zone in a file that is not the caller's
// alone: one owned by another user than the effective uid (root too: a file
// another user made is theirs to keep writing, whatever Open then sets its
// mode to), or one that group or others may write when perm does not let
// them (they may hold it open already).
func mayCreateIn(path string, st *unix.Stat_t, perm os.FileMode) error {
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d", ErrNotOwner, path, st.Uid, uid)
	}
	if extra := os.FileMode(st.Mode) & 0o022 &^ perm; extra != 0 {
		return fmt.Errorf("%w: %s has mode %v, which lets others write it, and %v was asked for", ErrNotOwner, path, os.FileMode(st.Mode)&os.ModePerm, perm)
	}
	return nil
}
