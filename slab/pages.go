package slab

// Page runs and the lists that link pages. Every function here needs the
// region's lock held by the caller, and trusts only descriptors it checks.

// pushClass links page p at the head of class c's list of pages with free
// chunks.
func (s *Slab) pushClass(c int, p uint32) {
	head := s.classHead(c)
	d := s.desc(p)
	d.Prev = 0
	d.Next = *head
	if *head != 0 && *head-1 < s.npages {
		s.desc(*head - 1).Prev = p + 1
	}
	*head = p + 1
}

// unlinkClass removes page p from class c's list.
func (s *Slab) unlinkClass(c int, p uint32) {
	s.unlink(s.classHead(c), p)
}

// unlink removes page p from the list whose head word is head.
func (s *Slab) unlink(head *uint32, p uint32) {
	d := s.desc(p)
	if d.Prev != 0 && d.Prev-1 < s.npages {
		s.desc(d.Prev - 1).Next = d.Next
	} else {
		*head = d.Next
	}
	if d.Next != 0 && d.Next-1 < s.npages {
		s.desc(d.Next - 1).Prev = d.Prev
	}
	d.Next, d.Prev = 0, 0
}

// putFreeRun marks pages [p, p+n) as one free run and links it. It writes
// every page's descriptor: for Format and Rebuild. Alloc and Free keep the
// inner pages' marks and rewrite only a run's ends (linkFreeRun).
func (s *Slab) putFreeRun(p, n uint32) {
	for i := uint32(1); i+1 < n; i++ {
		*s.desc(p + i) = desc{Kind: kindFreeBody, Run: p}
	}
	s.linkFreeRun(p, n)
}

// linkFreeRun writes the first and last descriptors of the free run [p, p+n)
// and links it; the pages between must already be marked kindFreeBody.
func (s *Slab) linkFreeRun(p, n uint32) {
	d := s.desc(p)
	*d = desc{Kind: kindFree, Run: n}
	if n > 1 {
		*s.desc(p + n - 1) = desc{Kind: kindFreeTail, Run: p}
	}
	h := s.hdr()
	d.Next = h.FreeRuns
	if h.FreeRuns != 0 && h.FreeRuns-1 < s.npages {
		s.desc(h.FreeRuns - 1).Prev = p + 1
	}
	h.FreeRuns = p + 1
	h.FreePages += n
}

// dropFreeRun unlinks the free run at p.
func (s *Slab) dropFreeRun(p uint32) {
	n := s.desc(p).Run
	s.unlink(&s.hdr().FreeRuns, p)
	s.hdr().FreePages -= n
}

// takePages removes n contiguous pages from the free runs (first fit, from the
// end of the run so that its head stays in place) and returns the first.
func (s *Slab) takePages(n uint32) (uint32, error) {
	h := s.hdr()
	for link, steps := h.FreeRuns, uint32(0); link != 0; steps++ {
		p := link - 1
		if p >= s.npages || steps > s.npages {
			return 0, s.corrupt("free-run list at page %d", p)
		}
		d := s.desc(p)
		if d.Kind != kindFree || d.Run == 0 || d.Run > s.npages-p {
			return 0, s.corrupt("free run at page %d: kind %d run %d", p, d.Kind, d.Run)
		}
		link = d.Next
		if d.Run < n {
			continue
		}
		run := d.Run
		if run == n {
			s.dropFreeRun(p)
			return p, nil
		}
		// Take the run's last n pages: its head and links stay, its inner
		// pages keep their marks, and only the new last page is rewritten.
		d.Run = run - n
		if rest := run - n; rest > 1 {
			*s.desc(p + rest - 1) = desc{Kind: kindFreeTail, Run: p}
		}
		h.FreePages -= n
		return p + run - n, nil
	}
	h.Fails++
	return 0, ErrNoMemory
}

// freePages returns pages [p, p+n) to the free runs, merged with the free runs
// on either side. It writes FreeWord in the freed pages' first words, then
// marks their descriptors and rewrites the ends of the merged run, never the
// inner pages of the runs it joins.
func (s *Slab) freePages(p, n uint32) {
	for i := uint32(0); i < n; i++ {
		s.markFree(p + i)
	}
	for i := uint32(0); i < n; i++ {
		*s.desc(p + i) = desc{Kind: kindFreeBody, Run: p}
	}
	if p > 0 {
		before := s.desc(p - 1)
		head := uint32(1 << 31)
		switch before.Kind {
		case kindFree:
			if before.Run == 1 {
				head = p - 1
			}
		case kindFreeTail:
			head = before.Run
		}
		if head < p && s.desc(head).Kind == kindFree && head+s.desc(head).Run == p {
			run := s.desc(head).Run
			s.dropFreeRun(head)
			*s.desc(p - 1) = desc{Kind: kindFreeBody, Run: head} // its old last page
			n += run
			p = head
		}
	}
	if end := p + n; end < s.npages {
		after := s.desc(end)
		if after.Kind == kindFree && after.Run > 0 && after.Run <= s.npages-end {
			run := after.Run
			s.dropFreeRun(end)
			*s.desc(end) = desc{Kind: kindFreeBody, Run: p} // its old first page
			n += run
		}
	}
	// p..p+n-1: inner pages are all kindFreeBody; write the ends and link.
	s.linkFreeRun(p, n)
}
