package slab

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/shmzone/shmzone/internal/testutil"
)

func newRegion(t testing.TB, size int) *Slab {
	t.Helper()
	mem := make([]uint64, size/8) // 8-byte aligned, as a mapping is
	s, err := Format(unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), size), 4096)
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	return s
}

func TestLayoutSizes(t *testing.T) {
	if hdrSize != 56 || descSize != 48 {
		t.Fatalf("header %d, desc %d; want 56, 48", hdrSize, descSize)
	}
	if PageHdr != pageWord {
		t.Fatalf("PageHdr = %d, but the tests' geometry has a word of %d at the start of every page", PageHdr, pageWord)
	}
	for i := 1; i <= maxSmall; i++ {
		c := classOf(i)
		if int(classSizes[c]) < i || (c > 0 && int(classSizes[c-1]) >= i) {
			t.Fatalf("classOf(%d) = %d (size %d)", i, c, classSizes[c])
		}
	}
}

func TestAllocFreeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	s := newRegion(t, 1<<20)
	empty := s.FreeBytes()
	type chunk struct {
		off  uint32
		size int
		fill byte
	}
	var live []chunk
	for i := 0; i < 20000; i++ {
		if len(live) > 0 && r.IntN(100) < 45 {
			j := r.IntN(len(live))
			c := live[j]
			for k := 0; k < c.size; k++ {
				if s.mem[int(c.off)+k] != c.fill {
					t.Fatalf("op %d: chunk %d byte %d overwritten", i, c.off, k)
				}
			}
			if err := s.Free(c.off); err != nil {
				t.Fatalf("op %d: Free(%d) = %v", i, c.off, err)
			}
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		} else {
			size := 1 + r.IntN(200)
			if r.IntN(50) == 0 {
				size = 2049 + r.IntN(20000)
			}
			off, err := s.Alloc(size)
			if errors.Is(err, ErrNoMemory) {
				continue
			}
			if err != nil {
				t.Fatalf("op %d: Alloc(%d) = %v", i, size, err)
			}
			fill := byte(r.Uint32())
			for k := 0; k < size; k++ {
				s.mem[int(off)+k] = fill
			}
			live = append(live, chunk{off, size, fill})
		}
		if i%500 == 0 {
			if err := s.Check(); err != nil {
				t.Fatalf("op %d: Check: %v", i, err)
			}
		}
	}
	for _, c := range live {
		if err := s.Free(c.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.FreeBytes() != empty || s.FreePages() != s.Pages() {
		t.Fatalf("after freeing all: %v, want %d free bytes", s, empty)
	}
}

// A counter entry with a 16-byte key takes 56 bytes and must not be rounded
// up further (dict/DESIGN.md, section 2: about 64 bytes per counter with its index slot).
func TestCounterEntryClass(t *testing.T) {
	s := newSlab(t, 256<<10, 4096)
	const entry = 56
	n := (4096 - pageWord) / entry // 73 chunks after the word, as many as without it
	var offs []uint32
	for i := 0; i < 200; i++ {
		off, err := s.Alloc(entry)
		if err != nil {
			t.Fatalf("Alloc(%d) #%d = %v", entry, i, err)
		}
		if got, _ := s.Size(off); got != entry {
			t.Fatalf("Size(Alloc(%d)) = %d, want %d", entry, got, entry)
		}
		offs = append(offs, off)
	}
	st := s.Stats()
	if len(st) != 1 || st[0].Size != entry || st[0].Used != 200 || st[0].Pages != 3 || st[0].Free != 3*n-200 {
		t.Fatalf("Stats() = %+v, want one class of %d with 200 used and %d free in 3 pages", st, entry, 3*n-200)
	}
	for _, off := range offs {
		rel := int(off-s.pagesOff) % 4096
		if rel < pageWord || (rel-pageWord)%entry != 0 || (rel-pageWord)/entry >= n {
			t.Fatalf("chunk %d is at %d in its page, not at %d + i*%d for i < %d", off, rel, pageWord, entry, n)
		}
	}
}

func TestTooLargeAndNoMemory(t *testing.T) {
	s := newSlab(t, 64<<10, 4096)
	empty := s.FreeBytes()
	if _, err := s.Alloc(s.MaxAlloc() + 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Alloc(MaxAlloc()+1) = %v, want ErrTooLarge", err)
	}
	if want := s.Pages()*4096 - pageWord; s.MaxAlloc() != want {
		t.Fatalf("MaxAlloc() = %d, want %d pages less the first's word, %d", s.MaxAlloc(), s.Pages(), want)
	}
	if _, err := s.Alloc(int(^uint(0) >> 1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Alloc(MaxInt) = %v, want ErrTooLarge", err)
	}
	if s.FreeBytes() != empty || s.hdr().Fails != 0 {
		t.Fatalf("ErrTooLarge changed the region: %v, fails %d", s, s.hdr().Fails)
	}
	whole, err := s.Alloc(s.MaxAlloc())
	if err != nil {
		t.Fatalf("Alloc(MaxAlloc()) on an empty region = %v", err)
	}
	if whole != runAt(s, 0) {
		t.Fatalf("Alloc(MaxAlloc()) = %d, want %d, after page 0's word", whole, runAt(s, 0))
	}
	if got, err := s.Size(whole); err != nil || got != s.MaxAlloc() {
		t.Fatalf("Size(Alloc(MaxAlloc())) = %d, %v, want %d", got, err, s.MaxAlloc())
	}
	if s.FreeBytes() != 0 || s.FreePages() != 0 {
		t.Fatalf("after Alloc(MaxAlloc()): %v, want nothing free", s)
	}
	sizes := []int{1, 56, 2040, 2041, 2048, 4088, 4089, 4096}
	for _, size := range sizes {
		if _, err := s.Alloc(size); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("Alloc(%d) on a full region = %v, want ErrNoMemory", size, err)
		}
	}
	if got := s.hdr().Fails; got != uint64(len(sizes)) {
		t.Fatalf("Fails = %d, want %d", got, len(sizes))
	}
	if err := s.Free(whole); err != nil {
		t.Fatal(err)
	}

	// Fill with 16-byte chunks: every page holds 255 after its word, no
	// chunk is left free, and a freed chunk is the next one given.
	var offs []uint32
	for {
		off, err := s.Alloc(16)
		if errors.Is(err, ErrNoMemory) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	if want := s.Pages() * ((4096 - pageWord) / 16); len(offs) != want {
		t.Fatalf("%d chunks of 16 fit, want %d", len(offs), want)
	}
	for _, off := range offs {
		if rel := int(off-s.pagesOff) % 4096; rel < pageWord || (rel-pageWord)%16 != 0 {
			t.Fatalf("chunk %d is at %d in its page, not at %d + i*16", off, rel, pageWord)
		}
	}
	if s.FreeBytes() != 0 {
		t.Fatalf("FreeBytes() full of 16-byte chunks = %d, want 0", s.FreeBytes())
	}
	if _, err := s.Alloc(3000); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Alloc(3000) when full = %v, want ErrNoMemory", err)
	}
	mid := offs[len(offs)/2]
	if err := s.Free(mid); err != nil {
		t.Fatal(err)
	}
	if s.FreeBytes() != 16 {
		t.Fatalf("FreeBytes() after one Free = %d, want 16", s.FreeBytes())
	}
	if _, err := s.Alloc(17); !errors.Is(err, ErrNoMemory) {
		t.Fatalf("Alloc(17) with one 16-byte chunk free = %v, want ErrNoMemory", err)
	}
	if off, err := s.Alloc(16); err != nil || off != mid {
		t.Fatalf("Alloc(16) = %d, %v, want the freed %d", off, err, mid)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// A run whose length was overwritten (1 page to 2) over a full small page:
// Free finds the second page is no body of the run and returns ErrCorrupt,
// freeing nothing; the small page's chunks stay allocated. Free once
// trusted the length, freed the small page under its 39 live chunks,
// returned nil, and Check passed.
func TestFreeRunOfCorruptLength(t *testing.T) {
	s := newSlab(t, 64<<10, 4096)
	small, err := s.Alloc(100)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < perPage(104, 4096); i++ { // the page is full: out of its class's list
		if _, err := s.Alloc(100); err != nil {
			t.Fatal(err)
		}
	}
	run, err := s.Alloc(3000)
	if err != nil {
		t.Fatal(err)
	}
	rp, sp := pageOf(s, run), pageOf(s, small)
	if sp != rp+1 {
		t.Fatalf("the run is in page %d and the small page %d: want the small page right after the run", rp, sp)
	}
	free := s.FreeBytes()
	s.desc(rp).Run = 2
	if err := s.Free(run); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Free(run of corrupt length 2) = %v, want %v", err, ErrCorrupt)
	}
	if n, err := s.Size(small); err != nil || n != 104 {
		t.Errorf("Size(a chunk of the small page) = %d, %v; want 104, <nil>", n, err)
	}
	if got := s.FreeBytes(); got != free {
		t.Errorf("FreeBytes() = %d after the refused Free, want %d", got, free)
	}
}

// Freeing what is not an allocated chunk is ErrCorrupt and changes nothing.
func TestFreeBadOffset(t *testing.T) {
	s := newSlab(t, 64<<10, 4096)
	small1, _ := s.Alloc(100) // class 104
	small2, _ := s.Alloc(100)
	run, _ := s.Alloc(3 * 4096)
	gone, _ := s.Alloc(100)
	if err := s.Free(gone); err != nil {
		t.Fatal(err)
	}
	freePage := s.pageOff(s.desc(0).Run - 1) // last page of the free run at 0
	tests := []struct {
		name string
		off  uint32
	}{
		{"zero", 0},
		{"header", 8},
		{"descriptors", uint32(descStart)},
		{"just below pages", s.pagesOff - 1},
		{"inside a chunk", small1 + 8},
		{"one past a chunk start", small2 + 1},
		{"unallocated chunk", small2 + 2*104},
		{"freed chunk", gone},
		{"small page's word", small1 - pageWord},
		{"chunk without the word", small2 - pageWord},
		{"past the last chunk", chunkAt(s, pageOf(s, small1), perPage(104, 4096), 104)},
		{"inside a run", run + 100},
		{"run's page start", run - pageWord},
		{"run body page", run + 4096},
		{"run body page's word", run - pageWord + 4096},
		{"free page", freePage},
		{"free page after its word", freePage + pageWord},
		{"end of region", s.pagesOff + s.npages*s.pageSize},
		{"beyond region", uint32(len(s.mem)) + 4096},
		{"max", ^uint32(0)},
	}
	meta := func() []byte { return slices.Clone(s.mem[:s.pagesOff]) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := meta()
			if err := s.Free(tt.off); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Free(%d) = %v, want ErrCorrupt", tt.off, err)
			}
			if _, err := s.Size(tt.off); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Size(%d) = %v, want ErrCorrupt", tt.off, err)
			}
			s.Forget(tt.off)
			if !slices.Equal(before, meta()) {
				t.Fatalf("Free(%d) or Forget(%d) changed the metadata", tt.off, tt.off)
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check() after Free(%d) = %v", tt.off, err)
			}
		})
	}
	t.Run("double free", func(t *testing.T) {
		if err := s.Free(small1); err != nil {
			t.Fatalf("Free(%d) = %v", small1, err)
		}
		before := meta()
		if err := s.Free(small1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("second Free(%d) = %v, want ErrCorrupt", small1, err)
		}
		if !slices.Equal(before, meta()) {
			t.Fatalf("second Free changed the metadata")
		}
		if err := s.Free(run); err != nil {
			t.Fatalf("Free(run %d) = %v", run, err)
		}
		if err := s.Free(run); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("second Free(run %d) = %v, want ErrCorrupt", run, err)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestViewsOwnPages allocates chunks of one class through two views of one
// region in turn, as two processes creating their keys at the same time:
// each puts at most its first chunk in a page the other fills, and every
// later one in pages of its own, so that their chunks (and page lock words)
// are not interleaved. Once no page is free, they share what has room.
func TestViewsOwnPages(t *testing.T) {
	const pageSize = 4096
	a, err := Format(make([]byte, 64*pageSize), pageSize)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Attach(a.mem)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[uint32]map[string]int{} // page -> view -> chunks
	for i := 0; i < 400; i++ {
		for _, v := range []struct {
			name string
			s    *Slab
		}{{"a", a}, {"b", b}} {
			off, err := v.s.Alloc(56)
			if err != nil {
				t.Fatalf("Alloc %d of view %s: %v", i, v.name, err)
			}
			p, _ := a.pageOf(off)
			if owner[p] == nil {
				owner[p] = map[string]int{}
			}
			owner[p][v.name]++
		}
	}
	for p, views := range owner {
		if min(views["a"], views["b"]) > 1 {
			t.Errorf("page %d holds %d chunks of view a and %d of view b: want at most one of a view in a page the other fills", p, views["a"], views["b"])
		}
	}
	// Fill the region: with no free page left, the views share pages.
	for {
		if _, err := a.Alloc(56); err != nil {
			break
		}
		if _, err := b.Alloc(56); err != nil {
			break
		}
	}
	if a.FreePages() != 0 {
		t.Fatalf("%d free pages left after filling", a.FreePages())
	}
}

// TestProcOwnsFirstChunks: the views of one process that share a Proc take
// a page of their own for their first chunk of a class once the process has
// allocated in any of them; a view without a Proc, or a process's very
// first chunk, goes to the class's first page with room.
func TestProcOwnsFirstChunks(t *testing.T) {
	const pageSize = 4096
	r1, err := Format(make([]byte, 16*pageSize), pageSize)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Format(make([]byte, 16*pageSize), pageSize)
	if err != nil {
		t.Fatal(err)
	}
	view := func(r *Slab, p *Proc) *Slab {
		v, err := Attach(r.mem)
		if err != nil {
			t.Fatal(err)
		}
		if p != nil {
			v.Share(p)
		}
		return v
	}
	page := func(v *Slab, size int) uint32 {
		off, err := v.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := v.pageOf(off)
		return p
	}
	var pa, pb Proc
	a1, a2 := view(r1, &pa), view(r2, &pa)
	b1, b2 := view(r1, &pb), view(r2, &pb)
	// Each process's first chunk ever: the class's first page with room.
	if p, q := page(a1, 56), page(b1, 56); p != q {
		t.Fatalf("first chunks of two processes in pages %d and %d: want the class's first page with room", p, q)
	}
	// Their first chunks in another region, of the same class and of
	// another: pages of their own.
	for _, size := range []int{56, 200} {
		if p, q := page(a2, size), page(b2, size); p == q {
			t.Errorf("size %d: processes that allocated before share page %d for their first chunks in a region", size, p)
		}
	}
	// A view of no Proc, first chunk of a class: the first page with room.
	lone := view(r2, nil)
	c := view(r2, nil)
	if p, q := page(lone, 1000), page(c, 1000); p != q {
		t.Errorf("views without a Proc put their first chunks in pages %d and %d: want the first page with room", p, q)
	}
}
