package slab

import (
	"errors"
	"testing"
)

// TestAllocOwn: AllocOwn allocates from the page the view fills for itself
// or from a free page it takes, never from a page another view took, and
// fails with ErrNoMemory, changing nothing, when neither is left; Mine
// tells each view's pages from the others' until the page is freed.
func TestAllocOwn(t *testing.T) {
	const pageSize, csize = 4096, 56
	a := newRegion(t, 8*pageSize)
	b, err := Attach(a.mem)
	if err != nil {
		t.Fatal(err)
	}
	a.SetOwner(1)
	b.SetOwner(2)
	perPage := (pageSize - PageHdr) / csize
	// a's chunks: a page a took, which is a's and not b's.
	var aOffs []uint32
	for range perPage + 1 {
		off, err := a.Alloc(csize)
		if err != nil {
			t.Fatal(err)
		}
		aOffs = append(aOffs, off)
		if !a.Mine(off) || b.Mine(off) {
			t.Fatalf("a's chunk %d: a.Mine %t, b.Mine %t; want true, false", off, a.Mine(off), b.Mine(off))
		}
	}
	// a's second page has room, but b's AllocOwn takes a page of its own
	// and fills it before taking another.
	bPages := map[uint32]int{}
	var bOffs []uint32
	for i := range perPage + 1 {
		off, err := b.AllocOwn(csize, 0)
		if err != nil {
			t.Fatalf("AllocOwn %d: %v", i, err)
		}
		p, _ := b.pageOf(off)
		bPages[p]++
		bOffs = append(bOffs, off)
		if !b.Mine(off) || a.Mine(off) {
			t.Fatalf("b's chunk %d: b.Mine %t, a.Mine %t; want true, false", off, b.Mine(off), a.Mine(off))
		}
		for _, ao := range aOffs {
			if q, _ := a.pageOf(ao); q == p {
				t.Fatalf("AllocOwn put chunk %d in page %d, which a took", off, p)
			}
		}
	}
	if len(bPages) != 2 {
		t.Fatalf("%d chunks of AllocOwn in pages %v, want a full page and one more", perPage+1, bPages)
	}
	// No free page left: a fills the rest, and b's AllocOwn fails once its
	// own page is full, leaving the region as it was.
	for {
		if _, err := a.Alloc(pageSize * 2); err != nil {
			break
		}
	}
	for a.FreePages() > 0 {
		if _, err := a.Alloc(csize); err != nil {
			t.Fatal(err)
		}
	}
	for {
		off, err := b.AllocOwn(csize, 0)
		if errors.Is(err, ErrNoMemory) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		bOffs = append(bOffs, off)
	}
	free := a.FreeBytes()
	if _, err := b.AllocOwn(csize, 0); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("AllocOwn with no own room = %v, want ErrNoMemory", err)
	}
	if a.FreeBytes() != free {
		t.Fatalf("a failed AllocOwn changed FreeBytes: %d, was %d", a.FreeBytes(), free)
	}
	if _, err := b.Alloc(csize); err != nil {
		t.Fatalf("Alloc with a's page's room = %v, want a chunk", err)
	}
	if _, err := b.AllocOwn(pageSize, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("AllocOwn(%d) = %v, want ErrTooLarge", pageSize, err)
	}
	// A page b frees is b's no more.
	for _, off := range bOffs {
		if err := b.Free(off); err != nil {
			t.Fatal(err)
		}
	}
	for _, off := range bOffs {
		if b.Mine(off) {
			t.Fatalf("b.Mine(%d) after b freed its pages", off)
		}
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestMineFollowsPage: a page is the Mine of the view that took it until it
// is freed, whoever frees it; the view that takes it next owns it, for
// every view, and the first view allocates no more in it, though the page
// has room of the class it was filling.
func TestMineFollowsPage(t *testing.T) {
	const pageSize, csize = 4096, 56
	a := newRegion(t, 8*pageSize)
	views := []*Slab{a}
	for range 2 {
		v, err := Attach(a.mem)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	b, c := views[1], views[2]
	for i, v := range views {
		v.SetOwner(uint32(i + 1))
	}
	var tagless Slab = *a
	tagless.SetOwner(0)
	// a fills part of a page, which it takes, the region having none of
	// the class.
	var offs []uint32
	for range 4 {
		off, err := a.Alloc(csize)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	first := offs[0]
	page, _ := a.pageOf(first)
	for _, off := range offs {
		if q, _ := a.pageOf(off); q != page {
			t.Fatalf("a's chunks in pages %d and %d, want one page", page, q)
		}
		if !a.Mine(off) || b.Mine(off) || c.Mine(off) || tagless.Mine(off) {
			t.Fatalf("chunk %d of a's page: Mine a %t b %t c %t tagless %t, want a's alone", off, a.Mine(off), b.Mine(off), c.Mine(off), tagless.Mine(off))
		}
	}
	// b frees them all (as a process does that moves or deletes another's
	// entries): the page is free, and a's no more.
	for _, off := range offs {
		if err := b.Free(off); err != nil {
			t.Fatal(err)
		}
	}
	if a.Mine(first) {
		t.Fatalf("a.Mine(%d) after b freed the page's chunks", first)
	}
	// c takes it (the lowest free page: the one b freed).
	var cOff uint32
	for {
		off, err := c.AllocOwn(csize, 0)
		if err != nil {
			t.Fatal(err)
		}
		if q, _ := c.pageOf(off); q == page {
			cOff = off
			break
		}
	}
	if !c.Mine(cOff) || a.Mine(cOff) || b.Mine(cOff) {
		t.Fatalf("page %d after c took it: Mine a %t b %t c %t, want c's alone", page, a.Mine(cOff), b.Mine(cOff), c.Mine(cOff))
	}
	// a's hint still names the page, which has room of a's class: a takes
	// another page rather than fill c's.
	off, err := a.Alloc(csize)
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := a.pageOf(off); q == page || !a.Mine(off) {
		t.Fatalf("a allocated %d in page %d (Mine %t), after c took page %d", off, q, a.Mine(off), page)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestAllocOwnReserve: AllocOwn takes a free page only while more than
// reserve pages are free, and fills the page it took whatever the reserve.
func TestAllocOwnReserve(t *testing.T) {
	const pageSize, csize = 4096, 56
	s := newRegion(t, 8*pageSize)
	free := s.FreePages()
	if _, err := s.AllocOwn(csize, free); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("AllocOwn(%d, %d) with %d free pages = %v, want ErrNoMemory", csize, free, free, err)
	}
	for i := range (pageSize - PageHdr) / csize {
		if _, err := s.AllocOwn(csize, free-1); err != nil {
			t.Fatalf("AllocOwn %d with reserve %d: %v", i, free-1, err)
		}
	}
	if s.FreePages() != free-1 {
		t.Fatalf("%d free pages after filling one page, want %d", s.FreePages(), free-1)
	}
	if _, err := s.AllocOwn(csize, free-1); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("AllocOwn with its page full and %d free pages, reserve %d = %v, want ErrNoMemory", free-1, free-1, err)
	}
	if _, err := s.AllocOwn(csize, free-2); err != nil {
		t.Fatalf("AllocOwn with reserve %d = %v", free-2, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
