package slab

import (
	"errors"
	"sync/atomic"
	"testing"
)

// ownerViews returns n views of one region of pages pages, the i-th with
// owner tag i+1 and a Proc of its own that has allocated, so that each
// fills pages of its own from its first chunk of a class on.
func ownerViews(t *testing.T, pages, n int) []*Slab {
	t.Helper()
	a := newRegion(t, (pages+1)*4096)
	views := []*Slab{a}
	for len(views) < n {
		v, err := Attach(a.mem)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
	}
	for i, v := range views {
		v.SetOwner(uint32(i + 1))
		p := new(Proc)
		p.allocated.Store(true)
		v.Share(p)
	}
	return views
}

// allocPage allocates a chunk of size in v and returns it with its page.
func allocPage(t *testing.T, v *Slab, size int) (off, page uint32) {
	t.Helper()
	off, err := v.Alloc(size)
	if err != nil {
		t.Fatalf("Alloc(%d) = %v", size, err)
	}
	page, _ = v.pageOf(off)
	return off, page
}

// TestAdoptBeforeFreePage: a view that needs a page of a class takes over
// one with room that names no owner, or an owner gone, before it takes a
// free page; a live owner's page it fills only once no page is free.
func TestAdoptBeforeFreePage(t *testing.T) {
	const small, mid = 56, 200
	v := ownerViews(t, 8, 4)
	a, b, c, live := v[0], v[1], v[2], v[3]
	gone := map[uint32]bool{}
	a.SetGone(func(tag uint32) bool { return gone[tag] })

	_, released := allocPage(t, b, small)
	if n := b.Release(func(tag uint32) bool { return tag == 2 }); n != 1 {
		t.Fatalf("Release of b's pages released %d, want 1", n)
	}
	_, dead := allocPage(t, c, mid)
	gone[3] = true
	_, held := allocPage(t, live, 1000)

	tests := []struct {
		name string
		size int
		want uint32
	}{
		{"released", small, released},
		{"owner gone", mid, dead},
	}
	for _, tt := range tests {
		free := a.FreePages()
		off, p := allocPage(t, a, tt.size)
		if p != tt.want || a.FreePages() != free || !a.Mine(off) {
			t.Errorf("%s: Alloc(%d) in page %d (Mine %t), %d free pages; want page %d, %d free, Mine", tt.name, tt.size, p, a.Mine(off), a.FreePages(), tt.want, free)
		}
	}
	// A live owner's page: a takes a free page of its own while one is.
	if _, p := allocPage(t, a, 1000); p == held {
		t.Errorf("Alloc(1000) in page %d, which a live owner holds, with %d pages free", p, a.FreePages())
	}
	for a.FreePages() > 0 {
		allocPage(t, a, 3000)
	}
	if _, err := a.Alloc(3000); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Alloc(3000) with no free page = %v, want ErrNoMemory", err)
	}
	// a's own page of 1000 is full (three chunks a page); the live
	// owner's page has room, and a fills it before it reports no memory.
	var last uint32
	for {
		off, err := a.Alloc(1000)
		if errors.Is(err, ErrNoMemory) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last, _ = a.pageOf(off)
	}
	if last != held {
		t.Errorf("last Alloc(1000) before ErrNoMemory in page %d, want the live owner's page %d", last, held)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaveFullPage: a full page that has a chunk freed names no owner from
// then on, unless its owner freed it and fills it, or holds it in a slot
// it had free (heldSlots); the owner fills those again before others. A
// page with room keeps its owner whoever frees in it.
func TestLeaveFullPage(t *testing.T) {
	const csize = 1000 // four chunks a page
	v := ownerViews(t, 16, 2)
	a, b := v[0], v[1]
	per := chunksPerPage(classOf(csize), a.pageSize)
	var offs [][]uint32
	var pages []uint32
	for range heldSlots + 2 {
		var page []uint32
		var p uint32
		for range per {
			var off uint32
			off, p = allocPage(t, a, csize)
			page = append(page, off)
		}
		offs, pages = append(offs, page), append(pages, p)
	}
	last := len(pages) - 1 // the page a fills
	free := func(v *Slab, off uint32) {
		t.Helper()
		if err := v.Free(off); err != nil {
			t.Fatal(err)
		}
	}
	names := func(i int) uint32 { return a.desc(pages[i]).Run }
	free(a, offs[last][0])
	if names(last) != a.owner {
		t.Errorf("page a fills named %#x after a freed a chunk in it, want a's %#x", names(last), a.owner)
	}
	for i := range heldSlots + 1 {
		free(a, offs[i][0])
		want := a.owner
		if i == heldSlots {
			want = 0 // no slot left
		}
		if names(i) != want {
			t.Errorf("full page %d of a's had a chunk freed by a, with %d slots held: names %#x, want %#x", i, i, names(i), want)
		}
	}
	// a fills its page again, and b frees a chunk in it: it is left.
	offs[last][0], _ = allocPage(t, a, csize)
	free(b, offs[last][1])
	if names(last) != 0 {
		t.Errorf("full page a fills had a chunk freed by b: names %#x, want none", names(last))
	}
	// a goes on in a page it holds; b takes over a page left.
	if off, p := allocPage(t, a, csize); p != pages[0] && p != pages[1] || !a.Mine(off) {
		t.Errorf("a's chunk in page %d (Mine %t), want one of the pages it holds, %d or %d", p, a.Mine(off), pages[0], pages[1])
	}
	if off, p := allocPage(t, b, csize); p != pages[last] && p != pages[heldSlots] || !b.Mine(off) {
		t.Errorf("b's chunk in page %d (Mine %t), want one a left, %d or %d", p, b.Mine(off), pages[last], pages[heldSlots])
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	// A page with room keeps its owner, whoever frees in it.
	v = ownerViews(t, 4, 2)
	a, b = v[0], v[1]
	allocPage(t, a, csize)
	off, p := allocPage(t, a, csize)
	free(b, off)
	if a.desc(p).Run != a.owner {
		t.Errorf("page %d with room had a chunk freed by b: names %#x, want a's %#x", p, a.desc(p).Run, a.owner)
	}
}

// TestReleaseHeld: Release leaves the pages of the owners it names, those
// with room first in their class's list; HeldPages counts the pages that
// name a live owner, and StrandedBytes the free chunks of pages in use.
func TestReleaseHeld(t *testing.T) {
	v := ownerViews(t, 16, 2)
	a, b := v[0], v[1]
	all := func(uint32) bool { return true }
	for range 3 {
		allocPage(t, a, 56)
		allocPage(t, b, 56)
	}
	_, ap := allocPage(t, a, 1000)
	allocPage(t, b, 1000)
	if n := a.HeldPages(all); n != 4 {
		t.Fatalf("HeldPages = %d, want 4", n)
	}
	if n := a.HeldPages(func(tag uint32) bool { return tag == 2 }); n != 2 {
		t.Fatalf("HeldPages of b = %d, want 2", n)
	}
	c56, c1000 := classOf(56), classOf(1000)
	per56, per1000 := chunksPerPage(c56, a.pageSize), chunksPerPage(c1000, a.pageSize)
	want := int64(2*(per56-3)*int(classSizes[c56]) + 2*(per1000-1)*int(classSizes[c1000]))
	if got := a.StrandedBytes(); got != want {
		t.Fatalf("StrandedBytes = %d, want %d", got, want)
	}
	if n := a.Release(func(tag uint32) bool { return tag == 1 }); n != 2 {
		t.Fatalf("Release of a's pages = %d, want 2", n)
	}
	if n := a.HeldPages(all); n != 2 {
		t.Fatalf("HeldPages after a released = %d, want 2", n)
	}
	if head := *a.classHead(classOf(1000)); head != ap+1 {
		t.Fatalf("class list head %d after Release, want a's page %d", head-1, ap)
	}
	if got := a.StrandedBytes(); got != want {
		t.Fatalf("StrandedBytes after Release = %d, want %d", got, want)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestAllocAwayHeld: AllocAway never allocates in the page it moves a chunk
// out of, though the view holds that page to fill next, and the page
// names no owner after: the view's next page is another.
func TestAllocAwayHeld(t *testing.T) {
	const csize = 1000 // four chunks a page
	a := ownerViews(t, 8, 1)[0]
	per := chunksPerPage(classOf(csize), a.pageSize)
	var first []uint32
	var held uint32
	for i := range 2 * per {
		off, p := allocPage(t, a, csize)
		if i < per {
			first, held = append(first, off), p
		}
	}
	if err := a.Free(first[0]); err != nil { // the full first page: held
		t.Fatal(err)
	}
	if a.desc(held).Run != a.owner || atomic.LoadUint32(&a.held[classOf(csize)][0]) != held+1 {
		t.Fatalf("page %d after a freed a chunk in it: names %#x, slot %d; want a's, held", held, a.desc(held).Run, a.held[classOf(csize)][0])
	}
	off, err := a.AllocAway(csize, first[1])
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := a.pageOf(off); p == held || a.desc(held).Run != 0 {
		t.Errorf("AllocAway from page %d: chunk in page %d, which names %#x; want another page, and none", held, p, a.desc(held).Run)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
