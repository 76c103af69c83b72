package slab

import (
	"errors"
	"math/bits"
	"sync/atomic"
)

// Alloc returns the offset of a chunk of at least size bytes, relative to the
// region. The chunk's bytes are not cleared. Errors: ErrTooLarge when size can
// never fit, ErrNoMemory when it does not fit now, ErrCorrupt when the
// metadata is found inconsistent.
func (s *Slab) Alloc(size int) (uint32, error) {
	if size <= 0 {
		size = 1
	}
	if isSmall(size, int(s.pageSize)) {
		return s.allocSmall(classOf(size), false, 0)
	}
	if size > s.MaxAlloc() {
		return 0, ErrTooLarge
	}
	n := uint32((size + PageHdr + int(s.pageSize) - 1) / int(s.pageSize))
	p, err := s.takePages(n)
	if err != nil {
		return 0, err
	}
	s.zeroPageLock(p)
	d := s.desc(p)
	d.Kind, d.Run, d.Used, d.Class, d.Next, d.Prev = kindRun, n, 1, 0, 0, 0
	for i := uint32(1); i < n; i++ {
		b := s.desc(p + i)
		b.Kind, b.Run, b.Used, b.Next, b.Prev = kindRunBody, p, 0, 0, 0
	}
	s.hdr().FreeBytes -= uint64(n) * uint64(s.pageSize)
	s.hdr().Allocs++
	return s.pageOff(p) + PageHdr, nil
}

// allocSmall allocates a chunk of class c; with ownOnly, from a page of the
// view's own or none, taking a free page only while more than reserve are
// (AllocOwn).
func (s *Slab) allocSmall(c int, ownOnly bool, reserve uint32) (uint32, error) {
	head := s.classHead(c)
	size := uint32(classSizes[c])
	n := chunksPerPage(c, s.pageSize)
	p, own := s.ownPage(c, n)
	if !own && (ownOnly || s.wantsOwn(c)) {
		// Another page to fill: one of its own with room (heldPage), or
		// one that no live view holds, before a free page (owners.go).
		// Not the latter for AllocOwn: a move fills the view's pages, or
		// a free page.
		p, own = s.heldPage(c, n)
		if !own && !ownOnly {
			q, found, err := s.adoptPage(c, n)
			if err != nil {
				return 0, err
			}
			p, own = q, found
		}
	}
	if ownOnly && !own && s.hdr().FreePages <= reserve {
		return 0, ErrNoMemory
	}
	took := false
	if !own && (*head == 0 || (ownOnly || s.wantsOwn(c)) && s.hdr().FreePages > 0) {
		// A page of its own while free pages last (see ownPage).
		q, err := s.takePages(1)
		switch {
		case err == nil:
			s.zeroPageLock(q)
			*s.desc(q) = desc{Kind: kindSmall, Class: uint8(c), Run: s.owner}
			s.hdr().FreeBytes -= uint64(s.pageSize) - uint64(n)*uint64(size)
			s.pushClass(c, q)
			took = true
		case ownOnly || *head == 0 || !errors.Is(err, ErrNoMemory):
			return 0, err
		}
	}
	if !own {
		p = *head - 1
	}
	if p >= s.npages {
		return 0, s.corrupt("class %d list head %d", c, p)
	}
	if own || took {
		atomic.StoreUint32(&s.hint[c], p+1|hintOwn)
	} else {
		atomic.StoreUint32(&s.hint[c], p+1)
	}
	d := s.desc(p)
	if d.Kind != kindSmall || int(d.Class) != c || int(d.Used) >= n {
		return 0, s.corrupt("page %d in class %d list: kind %d class %d used %d", p, c, d.Kind, d.Class, d.Used)
	}
	idx := -1
	for w := 0; w < len(d.Bitmap); w++ {
		if free := ^d.Bitmap[w]; free != 0 {
			idx = w*64 + bits.TrailingZeros64(free)
			break
		}
	}
	if idx < 0 || idx >= n {
		return 0, s.corrupt("page %d used %d but bitmap full", p, d.Used)
	}
	d.Bitmap[idx>>6] |= 1 << (idx & 63)
	d.Used++
	if int(d.Used) == n {
		s.unlinkClass(c, p)
	}
	h := s.hdr()
	h.FreeBytes -= uint64(size)
	h.Allocs++
	if s.proc != nil && !s.proc.allocated.Load() {
		s.proc.allocated.Store(true)
	}
	return s.chunkOff(p, idx, size), nil
}

// wantsOwn reports whether the view's next chunk of class c should come
// from a page of its own (ownPage): it has allocated one of the class
// before, or it shares a Proc that has allocated.
func (s *Slab) wantsOwn(c int) bool {
	return atomic.LoadUint32(&s.hint[c]) != 0 || s.proc != nil && s.proc.allocated.Load()
}

// hintOwn marks a hint whose page the view took for itself.
const hintOwn = 1 << 31

// ownPage returns the page this view took for itself and last allocated
// chunks of class c from, while it is still such a page with a chunk free
// and still names the view's owner (SetOwner; 0 for a view without one): a
// page that was freed and that another view took since is that view's.
// Each process has a view of its own (Attach): its first chunk of a class
// comes from the class's first page with room, as any would, and its next
// one from a page it takes for itself (a page no live view holds, or a
// free page: adoptPage, allocSmall), and so on from that page until it is
// full: a process puts at most one chunk of a class in a page that others
// fill. A process whose views share a Proc
// (a Dict's shards) puts none once it has allocated anywhere: only its very
// first chunk goes to a page others fill. The entries a process
// creates then share cache lines, and page lock words, with its own entries
// and not with those of other processes, whose writes would otherwise move
// the lines between their cores; a process that allocates once, such as a
// command-line tool, takes no page for itself. Once no page is free,
// allocations fill whatever page has room, as they would without it.
func (s *Slab) ownPage(c, n int) (uint32, bool) {
	h := atomic.LoadUint32(&s.hint[c])
	if h&hintOwn == 0 {
		return 0, false // none yet, or one it shares: its next chunk takes a page
	}
	p := h&^hintOwn - 1
	if p >= s.npages {
		return 0, false
	}
	d := s.desc(p)
	return p, d.Kind == kindSmall && int(d.Class) == c && int(d.Used) < n && d.Run == s.owner
}
