package slab

import "sync/atomic"

// Pages that no live view holds: a view that leaves (Release) or dies
// leaves its pages with room to the others, which fill them before they
// take a free page (adoptPage).

// adoptSteps bounds the walk of a class's list for a page to take over.
// Pages that views release go to the list's head, so the walk finds them
// first.
const adoptSteps = 64

// SetGone gives the view a test of whether an owner is gone for certain.
// The test takes the owner tag of a page. Package dict gives
// shm.Zone.TagReplaced. A view with an owner (SetOwner) takes over the
// pages with room of a gone owner before it takes a free page. It does so
// with those of no owner too. The test runs under the region's lock, once
// per page the view looks at. It must be cheap. nil, the default, judges no
// owner gone.
func (s *Slab) SetGone(gone func(tag uint32) bool) { s.gone = gone }

// adoptPage returns a page of class c with a free chunk that the view may
// fill as its own: one that names the view's owner, or one that names no
// owner or a gone one, which then names the view's. It looks at the first
// adoptSteps pages of the class's list. found is false when none of them
// is such a page, or when the view has no owner: a view without one
// cannot tell its pages from those of other views without one.
func (s *Slab) adoptPage(c, n int) (p uint32, found bool, err error) {
	if s.owner == 0 {
		return 0, false, nil
	}
	link := *s.classHead(c)
	for steps := 0; link != 0 && steps < adoptSteps; steps++ {
		p = link - 1
		if p >= s.npages {
			return 0, false, s.corrupt("class %d list at page %d", c, p)
		}
		d := s.desc(p)
		if d.Kind != kindSmall || int(d.Class) != c || int(d.Used) >= n {
			return 0, false, s.corrupt("page %d in class %d list: kind %d class %d used %d", p, c, d.Kind, d.Class, d.Used)
		}
		if d.Run == s.owner {
			return p, true, nil
		}
		if d.Run == 0 || s.gone != nil && s.gone(d.Run) {
			d.Run = s.owner
			return p, true, nil
		}
		link = d.Next
	}
	return 0, false, nil
}

// heldSlots is how many pages with room of a class a view holds besides
// the one it fills: pages of its own that it freed a chunk in (leave).
const heldSlots = 2

// leave is Free's judgement of page p of class c, which was full and has
// a free chunk now: the page stays its owner's only if this view is that
// owner, and fills it (its hint) or holds it in a slot it had free (held),
// to fill it again before it takes another page (heldPage). Otherwise it
// names no owner from now on, so that a view that needs room of its class
// takes it over (adoptPage). A view so holds at most 1+heldSlots pages
// with room per class. A slot is free when it names no page, or a page
// that is no longer the view's with room of the class.
func (s *Slab) leave(p uint32, c int, d *desc) {
	if d.Run == 0 {
		return
	}
	if d.Run == s.owner {
		if atomic.LoadUint32(&s.hint[c]) == p+1|hintOwn {
			return
		}
		n := chunksPerPage(c, s.pageSize)
		for i := range s.held[c] {
			h := atomic.LoadUint32(&s.held[c][i])
			if h == p+1 {
				return
			}
			if h == 0 || !s.holds(h-1, c, n) {
				atomic.StoreUint32(&s.held[c][i], p+1)
				return
			}
		}
	}
	d.Run = 0
}

// heldPage returns a page of class c with a free chunk that the view holds
// (leave), which it fills from now on: its hint, out of its slot. Slots
// that name no such page any more are emptied.
func (s *Slab) heldPage(c, n int) (uint32, bool) {
	if s.owner == 0 {
		return 0, false
	}
	for i := range s.held[c] {
		h := atomic.LoadUint32(&s.held[c][i])
		if h == 0 {
			continue
		}
		atomic.StoreUint32(&s.held[c][i], 0)
		if s.holds(h-1, c, n) {
			return h - 1, true
		}
	}
	return 0, false
}

// holds reports whether page p is a page of class c, of n chunks, with a
// free chunk, that names the view's owner.
func (s *Slab) holds(p uint32, c, n int) bool {
	if p >= s.npages {
		return false
	}
	d := s.desc(p)
	return d.Kind == kindSmall && int(d.Class) == c && int(d.Used) < n && d.Run == s.owner
}

// Release makes every small page whose owner tag fn names name no owner.
// Tag 0 is excepted. Release moves those with a free chunk to the head of
// their class's list. Views that need a page look there first (adoptPage).
// It returns how many pages it released. Package dict releases a Dict's
// pages as it closes. It also releases the pages of owners gone
// (shm.Zone.TagGone). fn is called once per page that names an owner, under
// the region's lock.
func (s *Slab) Release(fn func(tag uint32) bool) int {
	released := 0
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		if d.Kind != kindSmall || d.Run == 0 || int(d.Class) >= numClasses || !fn(d.Run) {
			continue
		}
		d.Run = 0
		released++
		c := int(d.Class)
		if int(d.Used) < chunksPerPage(c, s.pageSize) {
			s.unlinkClass(c, p)
			s.pushClass(c, p)
		}
	}
	return released
}

// HeldPages returns how many small pages name an owner that live reports
// live. Tag 0 is excepted. These are the pages that views hold for their
// own chunks. live is called once per page that names an owner, under the
// region's lock.
func (s *Slab) HeldPages(live func(tag uint32) bool) int {
	n := 0
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		if d.Kind == kindSmall && d.Run != 0 && live(d.Run) {
			n++
		}
	}
	return n
}

// StrandedBytes returns the bytes of the free chunks of pages that also
// hold chunks in use. Only chunks of those pages' classes can take them. It
// is FreeBytes less the bytes of the free pages.
func (s *Slab) StrandedBytes() int64 {
	h := s.hdr()
	return int64(h.FreeBytes) - int64(h.FreePages)*int64(s.pageSize)
}
