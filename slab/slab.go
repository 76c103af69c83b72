package slab

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// Slab allocates chunks from one region of bytes. It holds no state of its own
// beyond the region's geometry: everything lives in the region, so any number
// of Slab values in any number of processes may attach the same region. The
// caller serialises every method on one region (the dict's shard lock).
type Slab struct {
	mem       []byte
	pageSize  uint32
	pageShift uint32 // log2(pageSize)
	npages    uint32
	pagesOff  uint32
	// hint is, per class, the page this view last allocated from, + 1,
	// with hintOwn when the view took that page from the free pages itself
	// (ownPage). Accessed atomically: the region's lock is a word in
	// shared memory, where the race detector sees no synchronisation.
	hint [numClasses]uint32
	// held is, per class, pages of the view's own that it freed a chunk
	// in after they were full, + 1, 0 for none: it fills them again
	// before it takes another page (owners.go: leave). Atomic, as hint.
	held [numClasses][heldSlots]uint32
	// proc, when set (Share), is shared by the views of one process.
	proc *Proc
	// owner is the tag this view writes in the descriptor of each page it
	// takes for its chunks (SetOwner, Mine); 0: none.
	owner uint32
	// gone tells whether the owner a page names is gone (SetGone); nil:
	// none is.
	gone func(tag uint32) bool
}

// Proc is what the views of one process share, so that each view knows
// whether the process has allocated before, in any of them (ownPage).
type Proc struct {
	allocated atomic.Bool
}

// Allocated reports whether a view of p has allocated a chunk.
func (p *Proc) Allocated() bool { return p.allocated.Load() }

// Share makes the view one of the views of p: of a process whose first
// allocation has been made, anywhere, each view takes a page of its own for
// its first chunk of a class as well (ownPage).
func (s *Slab) Share(p *Proc) { s.proc = p }

// layoutFor returns how many pages of pageSize bytes a region of size bytes
// holds after its header, class heads and one descriptor per page, and the
// offset of page 0, aligned to pageAlign; npages is 0 or less when the region
// is too small for one page.
func layoutFor(size int, pageSize int) (npages, pagesOff int) {
	// Each page costs its bytes plus a descriptor; pages start aligned.
	npages = (size - descStart - pageAlign) / (pageSize + descSize)
	for npages > 0 {
		pagesOff = alignUp(descStart+npages*descSize, pageAlign)
		if pagesOff+npages*pageSize <= size {
			break
		}
		npages--
	}
	return npages, pagesOff
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// Format lays out an empty slab over mem with pages of pageSize bytes and
// returns it attached. mem must hold at least two pages. Of the pages it
// writes only words of pages that a slab of this geometry already formatted
// over mem had taken (for a class, or in a run): FreeWord, as Free would
// have (an emptied region). A new region's pages, and the pages an emptied
// one had not taken, keep their bytes: a new region's file is zero, and
// Format does not touch its pages.
func Format(mem []byte, pageSize int) (*Slab, error) {
	s, err := geometry(mem, pageSize)
	if err != nil {
		return nil, err
	}
	if h := s.hdr(); h.Magic == magic && h.PageSize == s.pageSize && h.NPages == s.npages && h.PagesOff == s.pagesOff {
		for p := uint32(0); p < s.npages; p++ {
			if k := s.desc(p).Kind; k == kindSmall || k == kindRun || k == kindRunBody {
				s.markFree(p)
			}
		}
	}
	clear(mem[:s.pagesOff])
	s.writeHeader()
	s.putFreeRun(0, s.npages)
	s.hdr().FreeBytes = uint64(s.npages) * uint64(pageSize)
	return s, nil
}

// geometry lays out a region of mem with pages of pageSize bytes.
func geometry(mem []byte, pageSize int) (*Slab, error) {
	if pageSize < 512 || pageSize > 1<<16 || bits.OnesCount(uint(pageSize)) != 1 {
		return nil, fmt.Errorf("%w: page size %d", ErrBadRegion, pageSize)
	}
	if len(mem) > 1<<32-1 {
		return nil, fmt.Errorf("%w: region of %d bytes exceeds 4 GiB", ErrBadRegion, len(mem))
	}
	npages, pagesOff := layoutFor(len(mem), pageSize)
	if npages < 2 {
		return nil, fmt.Errorf("%w: %d bytes hold fewer than 2 pages", ErrBadRegion, len(mem))
	}
	return &Slab{mem: mem, pageSize: uint32(pageSize), pageShift: uint32(bits.TrailingZeros(uint(pageSize))), npages: uint32(npages), pagesOff: uint32(pagesOff)}, nil
}

// writeHeader writes the header's immutable fields from the geometry.
func (s *Slab) writeHeader() {
	h := s.hdr()
	h.Magic, h.PageSize, h.NPages, h.PagesOff = magic, s.pageSize, s.npages, s.pagesOff
}

// Attach returns the slab formatted over mem, after checking its geometry
// against len(mem). It does not check the metadata; Check does.
func Attach(mem []byte) (*Slab, error) {
	if len(mem) < descStart+descSize || len(mem) > 1<<32-1 {
		return nil, fmt.Errorf("%w: region of %d bytes", ErrBadRegion, len(mem))
	}
	s := &Slab{mem: mem}
	h := s.hdr()
	if h.Magic != magic {
		return nil, fmt.Errorf("%w: magic %#x", ErrBadRegion, h.Magic)
	}
	ps := int(h.PageSize)
	if ps < 512 || ps > 1<<16 || bits.OnesCount(uint(ps)) != 1 {
		return nil, fmt.Errorf("%w: page size %d", ErrBadRegion, ps)
	}
	npages, pagesOff := layoutFor(len(mem), ps)
	if int(h.NPages) != npages || int(h.PagesOff) != pagesOff {
		return nil, fmt.Errorf("%w: %d pages at %d, region holds %d at %d", ErrBadRegion, h.NPages, h.PagesOff, npages, pagesOff)
	}
	s.pageSize, s.npages, s.pagesOff = uint32(ps), uint32(npages), uint32(pagesOff)
	s.pageShift = uint32(bits.TrailingZeros(uint(ps)))
	return s, nil
}

// PageSize returns the region's page size.
func (s *Slab) PageSize() int { return int(s.pageSize) }

// Pages returns how many pages the region has.
func (s *Slab) Pages() int { return int(s.npages) }

// Capacity returns the bytes of all pages together.
func (s *Slab) Capacity() int64 { return int64(s.npages) * int64(s.pageSize) }

// MaxAlloc returns the largest size Alloc can ever satisfy: the whole region
// as one page run, after its first page's PageHdr.
func (s *Slab) MaxAlloc() int { return int(s.npages)*int(s.pageSize) - PageHdr }

// FreeBytes returns the bytes in free pages and in free chunks of partly used
// pages: what could be allocated in chunks of the right sizes.
func (s *Slab) FreeBytes() int64 { return int64(s.hdr().FreeBytes) }

// FreePages returns the pages in free runs.
func (s *Slab) FreePages() int { return int(s.hdr().FreePages) }

// ChunkSize returns the bytes Alloc(size) takes in this region.
func (s *Slab) ChunkSize(size int) int { return ChunkSize(size, int(s.pageSize)) }

func (s *Slab) pageOff(p uint32) uint32 { return s.pagesOff + p*s.pageSize }

// chunkOff returns the offset of chunk i of size bytes in page p.
func (s *Slab) chunkOff(p uint32, i int, size uint32) uint32 {
	return s.pageOff(p) + PageHdr + uint32(i)*size
}

// chunkIndex returns the index in page p of the chunk of size bytes at off,
// and whether off is the start of one.
func (s *Slab) chunkIndex(p, off, size uint32) (int, bool) {
	rel := off - s.pageOff(p)
	if rel < PageHdr || (rel-PageHdr)%size != 0 {
		return 0, false
	}
	return int((rel - PageHdr) / size), true
}

// PageLockAt returns the lock word of page p, p < Pages(), when the page
// holds chunks of a class or begins a run, and nil for a page that is free
// or inside a run, where the word is a chunk's bytes or nothing.
func (s *Slab) PageLockAt(p int) *uint64 {
	if k := s.desc(uint32(p)).Kind; k != kindSmall && k != kindRun {
		return nil
	}
	return s.pageHdrWord(uint32(p))
}

// PageLock returns the lock word of the page that holds offset off: the
// PageHdr word at the start of a page of chunks of a class, or of the first
// page of a run. No chunk covers it; Alloc zeroes it when it turns a free
// page into one of those, and freeing the page writes FreeWord in it;
// nothing else here writes it. It returns nil
// for an offset outside the pages, or in a page that is free or inside a
// run, whose first word is no lock. The answer holds while the region's
// lock is held.
func (s *Slab) PageLock(off uint32) *uint64 {
	p, ok := s.pageOf(off)
	if !ok {
		return nil
	}
	if k := s.desc(p).Kind; k != kindSmall && k != kindRun {
		return nil
	}
	return s.pageHdrWord(p)
}

// PageWord returns the first word of the page that holds offset off, nil
// for an offset outside the pages. It reads no metadata: it is PageLock for
// an off known to be an allocated chunk's, such as one a caller without the
// region's lock found and then validated, where the metadata read would be
// a guess too.
func (s *Slab) PageWord(off uint32) *uint64 {
	p, ok := s.pageOf(off)
	if !ok {
		return nil
	}
	return s.pageHdrWord(p)
}

// PageGeometry returns the offset of page 0 and log2 of the page size;
// they do not change after Format. An offset off in the pages is in page
// (off-pagesOff)>>pageShift, whose first word PageWord returns.
func (s *Slab) PageGeometry() (pagesOff, pageShift uint32) { return s.pagesOff, s.pageShift }

// pageOf returns the page that holds off, if off is in the pages.
func (s *Slab) pageOf(off uint32) (uint32, bool) {
	if off < s.pagesOff {
		return 0, false
	}
	p := (off - s.pagesOff) >> s.pageShift
	return p, p < s.npages
}

// zeroPageLock clears page p's lock word as the page begins to hold chunks:
// while it was free (FreeWord) or inside a run, its first bytes were
// nobody's lock.
func (s *Slab) zeroPageLock(p uint32) {
	*s.pageHdrWord(p) = 0
}

// markFree writes FreeWord in page p's first word as the page is freed,
// before its descriptor says so. It is an atomic store: a process that
// swapped the word on a stale guess may write it at the same time, with a
// compare-and-swap that then fails.
func (s *Slab) markFree(p uint32) {
	atomic.StoreUint64(s.pageHdrWord(p), FreeWord)
}

// locate returns the page of off and checks it lies in the page area.
func (s *Slab) locate(off uint32) (uint32, error) {
	if off < s.pagesOff || off >= s.pagesOff+s.npages*s.pageSize {
		return 0, s.corrupt("offset %d outside pages", off)
	}
	return (off - s.pagesOff) / s.pageSize, nil
}

// Size returns the usable bytes of the allocated chunk at off.
func (s *Slab) Size(off uint32) (int, error) {
	p, err := s.locate(off)
	if err != nil {
		return 0, err
	}
	d := s.desc(p)
	switch d.Kind {
	case kindSmall:
		if int(d.Class) >= numClasses {
			return 0, s.corrupt("page %d class %d", p, d.Class)
		}
		size := uint32(classSizes[d.Class])
		idx, ok := s.chunkIndex(p, off, size)
		if !ok || idx >= chunksPerPage(int(d.Class), s.pageSize) || d.Bitmap[idx>>6]&(1<<(idx&63)) == 0 {
			return 0, s.corrupt("offset %d is not an allocated chunk", off)
		}
		return int(size), nil
	case kindRun:
		if off-s.pageOff(p) != PageHdr || d.Run == 0 || d.Run > s.npages-p {
			return 0, s.corrupt("offset %d is not an allocated run", off)
		}
		return int(d.Run)*int(s.pageSize) - PageHdr, nil
	}
	return 0, s.corrupt("offset %d in page %d of kind %d", off, p, d.Kind)
}

// Free returns the chunk at off to the region. A small page whose last chunk
// is freed returns to the free pages. Freeing an offset that is not an
// allocated chunk returns ErrCorrupt and changes nothing.
func (s *Slab) Free(off uint32) error {
	if _, err := s.Size(off); err != nil {
		return err
	}
	p, _ := s.locate(off)
	d := s.desc(p)
	h := s.hdr()
	if d.Kind == kindRun {
		n := d.Run
		// The run's pages must all name it: a corrupt length would free
		// pages that hold other chunks (Check and Rebuild test the same).
		for i := uint32(1); i < n; i++ {
			if b := s.desc(p + i); b.Kind != kindRunBody || b.Run != p {
				return s.corrupt("run at page %d of %d pages: page %d is of kind %d, run %d", p, n, p+i, b.Kind, b.Run)
			}
		}
		h.FreeBytes += uint64(n) * uint64(s.pageSize)
		s.freePages(p, n)
		h.Frees++
		return nil
	}
	c := int(d.Class)
	size := uint32(classSizes[c])
	n := chunksPerPage(c, s.pageSize)
	idx, _ := s.chunkIndex(p, off, size) // Size checked it
	wasFull := int(d.Used) == n
	d.Bitmap[idx>>6] &^= 1 << (idx & 63)
	d.Used--
	h.FreeBytes += uint64(size)
	h.Frees++
	switch {
	case d.Used == 0:
		if !wasFull {
			s.unlinkClass(c, p)
		}
		h.FreeBytes += uint64(s.pageSize) - uint64(n)*uint64(size)
		s.freePages(p, 1)
	case wasFull:
		s.leave(p, c, d)
		s.pushClass(c, p)
	}
	return nil
}

func (s *Slab) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
