package slab

import "testing"

// TestPackable: Packable names the least used page of a class whose chunks
// fit in the free chunks of the class's other pages, for a size of another
// class or of one page; none when they do not fit, for the class's own
// size, or for a run of two pages.
func TestPackable(t *testing.T) {
	const csize = 1000 // four chunks a page
	s := newRegion(t, 8*4096)
	per := chunksPerPage(classOf(csize), s.pageSize)
	var pages [3][]uint32
	for i := range pages {
		for range per {
			off, p := allocPage(t, s, csize)
			if i > 0 && p == pageOfOff(s, pages[i-1][0]) {
				t.Fatalf("chunk %d in page %d, the page before's", off, p)
			}
			pages[i] = append(pages[i], off)
		}
	}
	// Pages with 2, 3 and 4 chunks in use: the least used page's two do
	// not fit in the one chunk free elsewhere.
	keep := []int{2, 3, 4}
	for i, offs := range pages {
		for _, off := range offs[keep[i]:] {
			if err := s.Free(off); err != nil {
				t.Fatal(err)
			}
		}
	}
	if off, ok := s.Packable(56); ok {
		t.Errorf("Packable(56) = page %d with 1 chunk free for 2, want none", pageOfOff(s, off))
	}
	// Two pages with 2 chunks in use: either fits in the other.
	if err := s.Free(pages[1][2]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		size int
		ok   bool
	}{
		{"another class", 56, true},
		{"one page", 3000, true},
		{"its own class", csize, false},
		{"two pages", 5000, false},
	}
	for _, tt := range tests {
		off, ok := s.Packable(tt.size)
		if ok != tt.ok {
			t.Errorf("%s: Packable(%d) = %t, want %t", tt.name, tt.size, ok, tt.ok)
		}
		if p := pageOfOff(s, off); ok && p != pageOfOff(s, pages[0][0]) && p != pageOfOff(s, pages[1][0]) {
			t.Errorf("%s: Packable(%d) = page %d, want one with 2 chunks in use", tt.name, tt.size, p)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// pageOfOff returns the page that holds off.
func pageOfOff(s *Slab, off uint32) uint32 {
	p, _ := s.pageOf(off)
	return p
}
