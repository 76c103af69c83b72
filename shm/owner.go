package shm

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A zone opened read-write is a lock owner: it holds one slot of the zone's
// owner slot table (layout.go) for as long as it is open, by an OFD write
// lock on the slot's byte of the file, taken on a descriptor of its own open
// file description. The kernel drops that lock when the last descriptor of
// the description closes, which a process's death does, whatever its PID
// namespace; no pid is involved, so none can be reused or mean another
// process in another namespace.

// owner is a zone's identity as a lock owner.
type owner struct {
	fd   int    // a descriptor of the zone's own open file description; -1 when closed
	slot int    // the slot held; -1 for a read-only zone, which holds none
	word uint64 // the lock word this zone writes
}

// localWord is the lock word of a read-only zone: it names no slot, and is
// written only to words of the process's own memory (dict's read-only view).
const localWord = math.MaxUint64

// ownerWord returns the lock word of the owner of slot with generation gen.
func ownerWord(slot int, gen uint32) uint64 { return uint64(gen)<<32 | uint64(uint32(slot)) }

// attachOwner gives the zone its owner identity, once its file is mapped:
// a descriptor of fd's open file description, kept until Close (close-on-exec,
// so no child inherits a slot), and for a read-write zone a claimed slot.
func (z *Zone) attachOwner(fd int) error {
	z.own = owner{fd: -1, slot: -1, word: localWord}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "dup", Path: z.path, Err: err}
	}
	z.own.fd = dup
	if z.readOnly {
		return nil
	}
	if err := z.claimSlot(); err != nil {
		z.detachOwner()
		return err
	}
	return nil
}

// claimSlot takes the first free slot and bumps its generation, so that a
// lock word its previous owner left names a generation that is no more.
func (z *Zone) claimSlot() error {
	for i := 0; i < Slots; i++ {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: slotByte(i), Len: 1}
		err := unix.FcntlFlock(uintptr(z.own.fd), unix.F_OFD_SETLK, &lk)
		for err == unix.EINTR {
			err = unix.FcntlFlock(uintptr(z.own.fd), unix.F_OFD_SETLK, &lk)
		}
		switch err {
		case nil:
		case unix.EAGAIN, unix.EACCES:
			continue // held by a live owner
		default:
			return &os.PathError{Op: "lock owner slot", Path: z.path, Err: err}
		}
		gen := atomic.AddUint32(slotGen(z.data, i), 1)
		if gen == 0 { // 0 is no generation: a word with it names no owner
			gen = atomic.AddUint32(slotGen(z.data, i), 1)
		}
		z.own.slot, z.own.word = i, ownerWord(i, gen)
		return nil
	}
	return fmt.Errorf("%w: all %d owner slots of %s are held", ErrNoSlot, Slots, z.path)
}

// detachOwner closes the zone's descriptor, which releases its slot.
func (z *Zone) detachOwner() {
	if z.own.fd >= 0 {
		unix.Close(z.own.fd)
	}
	z.own = owner{fd: -1, slot: -1, word: localWord}
}

// slotHeld asks the kernel whether another open file description holds
// slot i's OFD lock. When it cannot tell, the slot is taken as held: a
// live owner is never taken over on a guess.
func (z *Zone) slotHeld(i int) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: slotByte(i), Len: 1}
	err := unix.FcntlFlock(uintptr(z.own.fd), unix.F_OFD_GETLK, &lk)
	for err == unix.EINTR {
		err = unix.FcntlFlock(uintptr(z.own.fd), unix.F_OFD_GETLK, &lk)
	}
	return err != nil || lk.Type != unix.F_UNLCK
}

// ownerDead reports whether the owner a held lock word names is gone: the
// word names no slot or no generation, its slot was claimed again since
// (another generation), or nobody holds the slot's OFD lock. The zone's own
// word is live here: whether a goroutine of this zone holds it is for
// the caller to know (kin.go).
func (z *Zone) ownerDead(word uint64) bool {
	if word == z.own.word {
		return false
	}
	slot, gen := uint32(word), uint32(word>>32)
	if slot >= Slots || gen == 0 {
		return true // no owner ever wrote it
	}
	if atomic.LoadUint32(slotGen(z.data, int(slot))) != gen {
		return true
	}
	return !z.slotHeld(int(slot))
}

// OwnerTag returns a 32-bit name of the zone as a lock owner. It is for
// marks that need less than a lock word, such as slab.SetOwner's. No two
// zones open read-write at once have the same tag. A zone closed earlier
// may have had it. OwnerTag returns 0 for a read-only zone, which holds no
// slot.
func (z *Zone) OwnerTag() uint32 {
	if z.own.slot < 0 {
		return 0
	}
	return ownerTag(z.own.slot, uint32(z.own.word>>32))
}

// ownerTag returns the tag of the owner of slot with generation gen.
func ownerTag(slot int, gen uint32) uint32 {
	tag := gen<<slotBits | uint32(slot)
	if tag == 0 { // slot 0, at a generation that fills the bits above it with 0
		tag = 1 << slotBits
	}
	return tag
}

// TagReplaced reports whether the zone that owner tag names is gone for
// certain. It is gone if tag is 0 or names no slot, or if its slot was
// claimed again since. TagReplaced reads one word of the slot table, and
// makes no system call. It does not tell an owner that closed or died if
// nobody claimed its slot since. TagGone tells it. An open zone's tag is
// never replaced.
func (z *Zone) TagReplaced(tag uint32) bool {
	slot := int(tag & (1<<slotBits - 1))
	if tag == 0 || slot >= Slots {
		return true
	}
	return ownerTag(slot, atomic.LoadUint32(slotGen(z.data, slot))) != tag
}

// TagGone reports whether no open zone has owner tag. That is so if
// TagReplaced reports it, or if the kernel says that nobody holds the
// tag's slot. Asking the kernel takes one system call. This zone's own tag
// is not gone. When the kernel cannot tell, TagGone reports the owner
// live.
func (z *Zone) TagGone(tag uint32) bool {
	if z.own.slot >= 0 && tag == z.OwnerTag() {
		return false
	}
	if z.TagReplaced(tag) {
		return true
	}
	return !z.slotHeld(int(tag & (1<<slotBits - 1)))
}
