package slab

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// A slab region, offsets relative to its first byte:
//
//	0        hdrSize                  descStart                 pagesOff
//	+--------+--------------------+---+------------------+------+----------+----------+--
//	| header | class heads        |pad| descriptors      | pad  | page 0   | page 1   |
//	|        | [numClasses]uint32 |   | [npages]desc     |      |          |          |
//	+--------+--------------------+---+------------------+------+----------+----------+--
//
// The first pad (0 to 7 bytes) aligns descStart to 8 for the bitmap words;
// the second aligns pagesOff, the header's PagesOff, to pageAlign. Offset 0
// is the header, so no chunk is ever at offset 0 and callers may use 0 as
// nil. The header (hdrSize bytes):
//
//	0          4          8          12         16         20         24
//	+----------+----------+----------+----------+----------+----------+
//	| magic    | pageSize | nPages   | pagesOff | freeRuns |freePages |
//	+----------+----------+----------+----------+----------+----------+
//	24               32               40               48               56
//	+----------------+----------------+----------------+----------------+
//	| freeBytes      | allocs         | frees          | fails          |
//	+----------------+----------------+----------------+----------------+
//
// A descriptor (descSize bytes) per page:
//
//	0      4      8      12   13    14     16                          48
//	+------+------+------+----+-----+------+---------------------------+
//	| next | prev | run  |kind|class| used | bitmap [4]uint64          |
//	+------+------+------+----+-----+------+---------------------------+
//
// next/prev link a page into its class's list of pages with free chunks, or a
// free run into the free-run list; links are page index + 1, 0 = none. The
// bitmap has a bit per chunk of a small page, set while the chunk is
// allocated: it is the only record of which chunks are in use, so repair needs
// nothing else.

const (
	magic = 0x534c4232 // "SLB2": chunks start after each page's PageHdr

	hdrSize       = int(unsafe.Sizeof(header{}))
	classHeadsOff = hdrSize
	classHeadSize = 4
	descStart     = (classHeadsOff + numClasses*classHeadSize + 7) &^ 7 // 8-aligned for the bitmap words
	descSize      = int(unsafe.Sizeof(desc{}))
	pageAlign     = 64
	maxChunks     = 256 // bits in desc.Bitmap

	// PageHdr is the bytes at the start of every page that no chunk covers.
	// They hold the page's lock word (PageLock). Chunks start after it.
	PageHdr = 8

	// FreeWord is the first word of a free page that was ever taken. The
	// region writes it when it frees a page: Free, Rebuild, Format. Only the
	// Alloc that gives the page the role of a class page or a run's first page
	// zeroes it.
	//
	// No lock owner writes FreeWord. A shm owner word names a slot below
	// shm.Slots in its low 32 bits. A stale guess that the page still holds a
	// chunk may lead to a compare-and-swap of 0 with an owner. It fails on
	// FreeWord. So does a swap of the owner's word with 0 (shm.Zone.Unswap).
	// So the free page's word is no lock. The Alloc that takes the page again
	// zeroes a word nobody holds. A process killed in Free may leave FreeWord
	// in an allocated page. A lock taken on it judges it dead and takes it
	// over.
	FreeWord = ^uint64(0)
)

// header is the overlay at offset 0. Every word is under the lock of whoever
// owns the region (the dict's shard lock), except Magic..PagesOff, which are
// immutable after Format.
type header struct {
	Magic     uint32 // immutable after Format
	PageSize  uint32 // immutable after Format
	NPages    uint32 // immutable after Format
	PagesOff  uint32 // immutable after Format: offset of page 0, pageAlign-aligned
	FreeRuns  uint32 // under lock: first free run, page index + 1
	FreePages uint32 // under lock: pages in free runs
	FreeBytes uint64 // under lock: bytes in free pages and free chunks
	Allocs    uint64 // under lock: successful Alloc calls
	Frees     uint64 // under lock: successful Free calls
	Fails     uint64 // under lock: Alloc calls that found no memory
}

var (
	_ [hdrSize - 56]struct{}
	_ [56 - hdrSize]struct{}
)

// Page kinds.
const (
	kindNone     = 0 // never formatted or corrupt: treated as free by Rebuild
	kindFree     = 1 // first page of a free run; Run = pages in the run
	kindFreeTail = 2 // last page of a free run of 2 or more; Run = index of its first page
	kindSmall    = 3 // chunks of class Class; Used chunks set in Bitmap; Run = owner's tag (Mine), 0 = none
	kindRun      = 4 // first page of an allocated run; Run = pages in the run
	kindRunBody  = 5 // other pages of an allocated run; Run = index of its first page
	kindFreeBody = 6 // inner pages of a free run (neither first nor last)
)

// desc is the overlay of a page descriptor; under the owner's lock.
type desc struct {
	Next   uint32
	Prev   uint32
	Run    uint32
	Kind   uint8
	Class  uint8
	Used   uint16
	Bitmap [4]uint64
}

var (
	_ [descSize - 48]struct{}
	_ [48 - descSize]struct{}
)

// loadKind and loadRun load Kind and Run atomically, for a reader that
// holds no lock (Mine, InRun). Kind is loaded with the 4-byte word it
// begins.
func (d *desc) loadKind() uint8 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], atomic.LoadUint32((*uint32)(unsafe.Pointer(&d.Kind))))
	return b[0]
}

func (d *desc) loadRun() uint32 { return atomic.LoadUint32(&d.Run) }

func (s *Slab) hdr() *header { return (*header)(unsafe.Pointer(&s.mem[0])) }

// desc returns page i's descriptor; i must be < s.npages.
func (s *Slab) desc(i uint32) *desc {
	off := descStart + int(i)*descSize
	return (*desc)(unsafe.Pointer(&s.mem[off : off+descSize][0]))
}

func (s *Slab) classHead(c int) *uint32 {
	off := classHeadsOff + c*classHeadSize
	return (*uint32)(unsafe.Pointer(&s.mem[off : off+4][0]))
}

// pageHdrWord returns the word in page p's PageHdr bytes. It is the page's
// lock word when the page holds chunks of a class or begins a run
// (PageLock). p must be < s.npages, so that the whole page lies in s.mem:
// one bounds check, of the word's first byte, is enough. Page locks are on
// every entry write's path.
func (s *Slab) pageHdrWord(p uint32) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.mem[s.pageOff(p)]))
}

// The descriptors' 64-bit words must be aligned wherever the region is.
var _ [1 - descStart%8]struct{}
