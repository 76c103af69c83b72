package slab

import (
	"math/bits"
	"sync/atomic"
)

// Moving chunks out of a page: a user of the region that must free a whole
// page (for chunks of another size) while some of its chunks must stay
// allocated moves those to other pages of their class.

// PageChunks calls fn with the offset of each allocated chunk of the small
// page that holds off. It goes in order, while fn returns true. It reports
// whether off lies in a page of chunks of a class. That excludes a run, a
// free page and a corrupt descriptor.
func (s *Slab) PageChunks(off uint32, fn func(chunk uint32) bool) bool {
	p, ok := s.pageOf(off)
	if !ok {
		return false
	}
	d := s.desc(p)
	if d.Kind != kindSmall || int(d.Class) >= numClasses {
		return false
	}
	s.eachChunk(p, d, fn)
	return true
}

// eachChunk calls fn with the offset of each allocated chunk of page p, a
// page of chunks of a class (its descriptor d, of a valid class), in order,
// while fn returns true; it reports whether fn always did.
func (s *Slab) eachChunk(p uint32, d *desc, fn func(off uint32) bool) bool {
	size := uint32(classSizes[d.Class])
	n := chunksPerPage(int(d.Class), s.pageSize)
	for w, word := range d.Bitmap {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if i >= n {
				return true
			}
			if !fn(s.chunkOff(p, i, size)) {
				return false
			}
		}
	}
	return true
}

// AllocAway is Alloc of a chunk of the class of size, which must be small.
// It allocates in any page but the one that holds away. That is where a
// chunk of that page moves to.
//
// Errors:
//   - ErrNoMemory when no other page has a free chunk of the class and no
//     page is free;
//   - ErrTooLarge for a size of no class;
//   - ErrCorrupt.
func (s *Slab) AllocAway(size int, away uint32) (uint32, error) {
	if size <= 0 {
		size = 1
	}
	if !isSmall(size, int(s.pageSize)) {
		return 0, ErrTooLarge
	}
	p, ok := s.pageOf(away)
	if !ok {
		return 0, s.corrupt("offset %d outside pages", away)
	}
	c := classOf(size)
	d := s.desc(p)
	if d.Kind == kindSmall && int(d.Class) == c && int(d.Used) < chunksPerPage(c, s.pageSize) {
		// The page has room, so it is in the class's list: out of it
		// while allocating, back at the list's head after.
		s.unlinkClass(c, p)
		defer s.pushClass(c, p)
	}
	// Not the view's own page to fill either, nor one it holds: the page
	// it fills next is another (leave).
	mine := false
	if h := atomic.LoadUint32(&s.hint[c]); h&^hintOwn == p+1 {
		atomic.StoreUint32(&s.hint[c], 0)
		mine = true
	}
	for i := range s.held[c] {
		if atomic.LoadUint32(&s.held[c][i]) == p+1 {
			atomic.StoreUint32(&s.held[c][i], 0)
			mine = true
		}
	}
	if mine && d.Kind == kindSmall && int(d.Class) == c && d.Run == s.owner {
		d.Run = 0
	}
	return s.allocSmall(c, false, 0)
}

// AllocOwn is Alloc of a chunk of the class of size, which must be small.
// It allocates in a page this view took for itself. That is the page it is
// filling (ownPage), or a free page. It takes a free page only while more
// than reserve pages are free. reserve keeps free pages for what needs them
// more. A chunk whose page the view did not take (Mine) moves here. So the
// chunks a process writes lie in its own pages.
//
// Errors:
//   - ErrNoMemory when the view fills no page of the class with room, and
//     no more than reserve pages are free;
//   - ErrTooLarge for a size of no class;
//   - ErrCorrupt.
func (s *Slab) AllocOwn(size, reserve int) (uint32, error) {
	if size <= 0 {
		size = 1
	}
	if !isSmall(size, int(s.pageSize)) {
		return 0, ErrTooLarge
	}
	return s.allocSmall(classOf(size), true, uint32(max(reserve, 0)))
}

// InRun reports whether the chunk at off begins a run of pages. A run holds
// its chunk alone, for a size of no class. No chunk of another view shares
// its pages. AllocOwn, whose pages are small, could not take it. Like Mine,
// InRun reads the page's descriptor without the region's lock, as a hint.
// Under the lock it is exact.
func (s *Slab) InRun(off uint32) bool {
	p, ok := s.pageOf(off)
	return ok && s.desc(p).loadKind() == kindRun
}

// SetOwner names the view's owner for Mine. tag is written in the
// descriptor of each page the view takes for its chunks. Every view, in any
// process, reads it there. Views that may allocate in the region at the
// same time must have tags of their own. Package dict gives a shard's view
// its zone's shm.Zone.OwnerTag. A view without an owner has tag 0, the
// default. It takes pages for itself all the same (ownPage). But Mine names
// none its own.
func (s *Slab) SetOwner(tag uint32) { s.owner = tag }

// Mine reports whether the chunk at off lies in a small page that this view
// took for itself. The page must name the view still (SetOwner). Once the
// page is freed, it is this view's no more, whoever takes it next. Mine
// reads the page's descriptor without the region's lock, as a hint. A page
// that changes hands meanwhile may read as either owner's. Under the lock
// it is exact. It loads the descriptor's words atomically.
func (s *Slab) Mine(off uint32) bool {
	p, ok := s.pageOf(off)
	if !ok || s.owner == 0 {
		return false
	}
	d := s.desc(p)
	return d.loadKind() == kindSmall && d.loadRun() == s.owner
}
