package slab

import "math/bits"

// ForEach calls fn for every allocated chunk, with its offset and size. It
// goes in page order, until fn returns false. Pages whose descriptors are
// inconsistent are skipped. Rebuild makes them free.
func (s *Slab) ForEach(fn func(off uint32, size int) bool) {
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		switch d.Kind {
		case kindSmall:
			if int(d.Class) >= numClasses {
				continue
			}
			size := int(classSizes[d.Class])
			if !s.eachChunk(p, d, func(off uint32) bool { return fn(off, size) }) {
				return
			}
		case kindRun:
			if d.Run == 0 || d.Run > s.npages-p {
				continue
			}
			if !fn(s.pageOff(p)+PageHdr, int(d.Run)*int(s.pageSize)-PageHdr) {
				return
			}
			p += d.Run - 1
		}
	}
}

// Forget marks the chunk at off free without fixing any list or count. It
// is a repair step, to be followed by Rebuild. An offset that is not an
// allocated chunk is ignored.
func (s *Slab) Forget(off uint32) {
	if _, err := s.Size(off); err != nil {
		return
	}
	p, _ := s.locate(off)
	d := s.desc(p)
	if d.Kind == kindRun {
		d.Kind = kindNone
		return
	}
	idx, _ := s.chunkIndex(p, off, uint32(classSizes[d.Class])) // Size checked it
	d.Bitmap[idx>>6] &^= 1 << (idx & 63)
}

// Rebuild recomputes every list and count from the descriptors' kinds,
// classes and bitmaps. The allocated chunks stay allocated. Every other
// page becomes free, and the free runs are merged. A page it frees gets
// FreeWord in its first word, as Free would have written. Rebuild repairs a
// region whose owner died in the middle of Alloc or Free.
func (s *Slab) Rebuild() {
	h := s.hdr()
	for c := 0; c < numClasses; c++ {
		*s.classHead(c) = 0
	}
	h.FreeRuns, h.FreePages, h.FreeBytes = 0, 0, 0
	free := make([]bool, s.npages) // repair is rare; the caller may allocate here
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		switch d.Kind {
		case kindSmall:
			if int(d.Class) >= numClasses {
				free[p] = true
				continue
			}
			n := chunksPerPage(int(d.Class), s.pageSize)
			used := 0
			for w := range d.Bitmap {
				lo := w * 64
				switch {
				case lo >= n:
					d.Bitmap[w] = 0
				case lo+64 > n:
					d.Bitmap[w] &= 1<<(n-lo) - 1
				}
				used += bits.OnesCount64(d.Bitmap[w])
			}
			if used == 0 {
				free[p] = true
				continue
			}
			d.Used = uint16(used)
			d.Next, d.Prev = 0, 0 // Run, the owner's tag, stays: a hint (Mine)
			size := uint64(classSizes[d.Class])
			h.FreeBytes += uint64(n-used) * size
			if used < n {
				s.pushClass(int(d.Class), p)
			}
		case kindRun:
			n := d.Run
			ok := n > 0 && n <= s.npages-p
			for i := uint32(1); ok && i < n; i++ {
				b := s.desc(p + i)
				ok = b.Kind == kindRunBody && b.Run == p
			}
			if !ok {
				free[p] = true
				continue
			}
			d.Next, d.Prev, d.Used, d.Class = 0, 0, 1, 0
			p += n - 1
		default:
			free[p] = true
		}
	}
	for p := uint32(0); p < s.npages; {
		if !free[p] {
			p++
			continue
		}
		q := p
		for q < s.npages && free[q] {
			// A page freed here that was not free gets FreeWord, as
			// Free gives it; a free page keeps its word.
			if k := s.desc(q).Kind; k != kindFree && k != kindFreeBody && k != kindFreeTail {
				s.markFree(q)
			}
			q++
		}
		s.putFreeRun(p, q-p)
		h.FreeBytes += uint64(q-p) * uint64(s.pageSize)
		p = q
	}
}

// Check verifies the region's invariants. It returns the first problem
// found, wrapped in ErrCorrupt. It checks that:
//   - descriptors are well formed;
//   - counts equal bitmaps;
//   - every page with free chunks is in its class list exactly once;
//   - no full page is in a class list;
//   - free runs are maximal, linked once and counted;
//   - FreeBytes equals what the pages hold.
func (s *Slab) Check() error {
	h := s.hdr()
	inList := make([]uint8, s.npages)
	if err := s.checkClassLists(inList); err != nil {
		return err
	}
	if err := s.checkFreeRunList(inList); err != nil {
		return err
	}
	freePages, freeBytes, err := s.checkPages(inList)
	if err != nil {
		return err
	}
	if freePages != h.FreePages {
		return s.corrupt("free pages %d, counted %d", h.FreePages, freePages)
	}
	if freeBytes != h.FreeBytes {
		return s.corrupt("free bytes %d, counted %d", h.FreeBytes, freeBytes)
	}
	return nil
}

// checkClassLists walks every class list. It checks each page's kind,
// class and back link, and that no page is linked twice. It sets inList to
// 1 for each page it finds.
func (s *Slab) checkClassLists(inList []uint8) error {
	for c := 0; c < numClasses; c++ {
		prev := uint32(0)
		for link, steps := *s.classHead(c), uint32(0); link != 0; steps++ {
			p := link - 1
			if p >= s.npages || steps > s.npages {
				return s.corrupt("class %d list: link %d", c, link)
			}
			d := s.desc(p)
			if d.Kind != kindSmall || int(d.Class) != c {
				return s.corrupt("class %d list holds page %d of kind %d class %d", c, p, d.Kind, d.Class)
			}
			if d.Prev != prev {
				return s.corrupt("page %d prev %d, want %d", p, d.Prev, prev)
			}
			if inList[p] != 0 {
				return s.corrupt("page %d linked twice", p)
			}
			inList[p] = 1
			prev, link = link, d.Next
		}
	}
	return nil
}

// checkFreeRunList walks the free-run list. It checks each run's head,
// length and back link, and that no page is linked twice. It sets inList
// to 2 for each run's first page.
func (s *Slab) checkFreeRunList(inList []uint8) error {
	prev := uint32(0)
	for link, steps := s.hdr().FreeRuns, uint32(0); link != 0; steps++ {
		p := link - 1
		if p >= s.npages || steps > s.npages {
			return s.corrupt("free-run list: link %d", link)
		}
		d := s.desc(p)
		if d.Kind != kindFree || d.Run == 0 || d.Run > s.npages-p {
			return s.corrupt("free-run list holds page %d of kind %d run %d", p, d.Kind, d.Run)
		}
		if d.Prev != prev {
			return s.corrupt("free run %d prev %d, want %d", p, d.Prev, prev)
		}
		if inList[p] != 0 {
			return s.corrupt("free run %d linked twice", p)
		}
		inList[p] = 2
		prev, link = link, d.Next
	}
	return nil
}

// checkPages checks every page's descriptor in page order, against the
// lists that inList records. It returns the free pages and the free bytes
// that the pages hold.
func (s *Slab) checkPages(inList []uint8) (freePages uint32, freeBytes uint64, err error) {
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		switch d.Kind {
		case kindSmall:
			n, err := s.checkSmallPage(p, d, inList[p])
			if err != nil {
				return 0, 0, err
			}
			freeBytes += n
		case kindRun:
			if err := s.checkRun(p, d, inList[p]); err != nil {
				return 0, 0, err
			}
			p += d.Run - 1
		case kindFree:
			n, err := s.checkFreeRun(p, d, inList[p])
			if err != nil {
				return 0, 0, err
			}
			freePages += n
			freeBytes += uint64(n) * uint64(s.pageSize)
			p += n - 1
		default:
			return 0, 0, s.corrupt("page %d of kind %d outside any run", p, d.Kind)
		}
	}
	return freePages, freeBytes, nil
}

// checkSmallPage checks page p of small chunks, with descriptor d. Its
// bitmap must hold no bits past its last chunk and must agree with Used.
// The page must be in its class list exactly when it has a free chunk.
// listed is the page's mark from the list walks. checkSmallPage returns
// the bytes of the page's free chunks.
func (s *Slab) checkSmallPage(p uint32, d *desc, listed uint8) (uint64, error) {
	if int(d.Class) >= numClasses {
		return 0, s.corrupt("page %d class %d", p, d.Class)
	}
	n := chunksPerPage(int(d.Class), s.pageSize)
	used := 0
	for w, word := range d.Bitmap {
		if lo := w * 64; lo >= n && word != 0 || lo < n && lo+64 > n && word>>(n-lo) != 0 {
			return 0, s.corrupt("page %d bitmap has bits past chunk %d", p, n)
		}
		used += bits.OnesCount64(word)
	}
	if used != int(d.Used) || used == 0 {
		return 0, s.corrupt("page %d used %d, bitmap has %d", p, d.Used, used)
	}
	if (used < n) != (listed == 1) {
		return 0, s.corrupt("page %d with %d of %d chunks used: in class list = %v", p, used, n, listed == 1)
	}
	return uint64(n-used) * uint64(classSizes[d.Class]), nil
}

// checkRun checks the allocated run that starts at page p, with descriptor
// d. It must fit in the region and be in no list. Each of its other pages
// must name p as its head. listed is the page's mark from the list walks.
func (s *Slab) checkRun(p uint32, d *desc, listed uint8) error {
	if d.Run == 0 || d.Run > s.npages-p || listed != 0 {
		return s.corrupt("run at page %d of %d pages", p, d.Run)
	}
	for i := uint32(1); i < d.Run; i++ {
		if b := s.desc(p + i); b.Kind != kindRunBody || b.Run != p {
			return s.corrupt("page %d of run %d: kind %d head %d", p+i, p, b.Kind, b.Run)
		}
	}
	return nil
}

// checkFreeRun checks the free run that starts at page p, with descriptor
// d. It must be in the free-run list, and its pages must be marked as Free
// marks them. No free run may follow it. listed is the page's mark from
// the list walks. checkFreeRun returns the run's length in pages.
func (s *Slab) checkFreeRun(p uint32, d *desc, listed uint8) (uint32, error) {
	if listed != 2 {
		return 0, s.corrupt("free run %d not linked", p)
	}
	n := d.Run
	for i := uint32(1); i < n; i++ {
		b := s.desc(p + i)
		// Inner pages are marked free; only the last one names
		// the first (Alloc and Free do not rewrite inner pages).
		want := uint8(kindFreeBody)
		if i == n-1 {
			want = kindFreeTail
		}
		if b.Kind != want || want == kindFreeTail && b.Run != p {
			return 0, s.corrupt("page %d of free run %d: kind %d head %d", p+i, p, b.Kind, b.Run)
		}
	}
	if end := p + n; end < s.npages && s.desc(end).Kind == kindFree {
		return 0, s.corrupt("free runs %d and %d not merged", p, end)
	}
	return n, nil
}

// Restore rewrites the header of the slab over mem, and attaches it. The
// geometry that pageSize and len(mem) determine gives the header. Then
// Restore rebuilds the lists from the descriptors. It recovers a region
// whose header was overwritten. It keeps the chunks its descriptors still
// record. The caller must hold the region's lock. It must then check or
// repair what the chunks hold.
func Restore(mem []byte, pageSize int) (*Slab, error) {
	s, err := geometry(mem, pageSize)
	if err != nil {
		return nil, err
	}
	s.writeHeader()
	s.Rebuild()
	return s, nil
}
