package slab

// Packing: when no page has room for a size and no page is free, a page
// of another class whose chunks fit in the free chunks of the other pages
// of its class can be emptied, by moving them there, and freed (package
// dict moves the chunks: AllocAway, then Free).

// packLook bounds the pages of each class's list that Packable looks at.
const packLook = 16

// Packable returns an offset in a small page to empty, for an Alloc of size
// bytes that found no memory. The free chunks of other pages of its class
// can hold the page's chunks. Of the pages Packable looks at, it is the one
// with the fewest chunks. Emptied, it is a free page. It serves size if
// size takes one page at most.
//
// Packable looks at the first packLook pages of each class's list but
// size's own. An Alloc that found no memory found no page there. ok is
// false when none of them is such a page. It is false too when size takes a
// run of more than one page. Packable reads the region and changes
// nothing. The answer holds while the caller holds the region's lock.
func (s *Slab) Packable(size int) (off uint32, ok bool) {
	if size <= 0 {
		size = 1
	}
	need := -1
	switch {
	case isSmall(size, int(s.pageSize)):
		need = classOf(size)
	case size > int(s.pageSize)-PageHdr:
		return 0, false
	}
	best, fewest := uint32(0), maxChunks+1
	for c := 0; c < numClasses; c++ {
		if c == need {
			continue
		}
		link := *s.classHead(c)
		if link == 0 {
			continue // no page of the class has room: most classes, most of the time
		}
		n := chunksPerPage(c, s.pageSize)
		free, pages, least, leastP := 0, 0, 0, uint32(0)
		for ; link != 0 && pages < packLook; pages++ {
			p := link - 1
			if p >= s.npages {
				break
			}
			d := s.desc(p)
			if d.Kind != kindSmall || int(d.Class) != c || int(d.Used) >= n {
				break // a corrupt list: Alloc finds it
			}
			free += n - int(d.Used)
			if pages == 0 || int(d.Used) < least {
				least, leastP = int(d.Used), p
			}
			link = d.Next
		}
		// The other pages' free chunks: all the free chunks seen but
		// the least used page's own.
		if pages >= 2 && least <= free-(n-least) && least < fewest {
			best, fewest = leastP, least
		}
	}
	if fewest > maxChunks {
		return 0, false
	}
	return s.pageOff(best) + PageHdr, true
}
