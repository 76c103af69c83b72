package slab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/shmzone/shmzone/internal/testutil"
)

// alignedMem returns size bytes, 8-byte aligned as a mapping is.
func alignedMem(size int) []byte {
	mem := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), size)
}

func newSlab(t testing.TB, size, pageSize int) *Slab {
	t.Helper()
	s, err := Format(alignedMem(size), pageSize)
	if err != nil {
		t.Fatalf("Format(%d bytes, page %d) = %v", size, pageSize, err)
	}
	return s
}

// model is the reference the slab is checked against: the live chunks with
// what was asked for and the byte they were filled with, which 8-byte units
// of the page area each chunk owns, and what each page holds.
type model struct {
	t      *testing.T
	s      *Slab
	chunks map[uint32]mchunk
	live   []uint32 // keys of chunks, for random picks
	owner  []uint32 // per 8-byte unit of the page area: chunk offset, 0 = none
	class  []int    // per page: chunk size of a small page, -1 in a run, 0 free
	used   []int    // per page: live chunks of a small page
}

type mchunk struct {
	size  int // asked for
	csize int // ChunkSize(size)
	fill  byte
}

func newModel(t *testing.T, s *Slab) *model {
	return &model{
		t: t, s: s, chunks: map[uint32]mchunk{},
		owner: make([]uint32, int(s.npages)*int(s.pageSize)/8),
		class: make([]int, s.npages),
		used:  make([]int, s.npages),
	}
}


// use records that the chunk at off is allocated (+1) or freed (-1).
func (m *model) use(off uint32, c mchunk, delta int) {
	ps := int(m.s.pageSize)
	p := int(off-m.s.pagesOff) / ps
	if !isSmall(c.size, ps) {
		v := -1
		if delta < 0 {
			v = 0
		}
		for i := 0; i < c.csize/ps; i++ {
			m.class[p+i] = v
		}
		return
	}
	m.class[p] = c.csize
	m.used[p] += delta
	if m.used[p] == 0 {
		m.class[p] = 0
	}
}

func (m *model) unit(off uint32) int { return int(off-m.s.pagesOff) / 8 }

// alloc allocates size bytes and checks the chunk against the model.
func (m *model) alloc(op, size int, fill byte) {
	t, s := m.t, m.s
	off, err := s.Alloc(size)
	if errors.Is(err, ErrNoMemory) {
		if why := m.fits(size); why != "" {
			t.Fatalf("op %d: Alloc(%d) = ErrNoMemory, but %s", op, size, why)
		}
		return
	}
	if err != nil {
		t.Fatalf("op %d: Alloc(%d) = %d, %v", op, size, off, err)
	}
	csize := s.ChunkSize(size)
	end := s.pagesOff + s.npages*s.pageSize
	if off < s.pagesOff || off%8 != 0 || uint64(off)+uint64(csize) > uint64(end) {
		t.Fatalf("op %d: Alloc(%d) = %d, outside the pages [%d, %d) or misaligned", op, size, off, s.pagesOff, end)
	}
	if got, err := s.Size(off); err != nil || got != csize || got < size {
		t.Fatalf("op %d: Size(Alloc(%d) = %d) = %d, %v, want %d", op, size, off, got, err, csize)
	}
	for u := m.unit(off); u < m.unit(off)+csize/8; u++ {
		if o := m.owner[u]; o != 0 {
			t.Fatalf("op %d: Alloc(%d) = %d overlaps the chunk at %d (%+v)", op, size, off, o, m.chunks[o])
		}
		m.owner[u] = off
	}
	for i := 0; i < size; i++ {
		s.mem[int(off)+i] = fill
	}
	m.chunks[off] = mchunk{size, csize, fill}
	m.live = append(m.live, off)
	m.use(off, m.chunks[off], +1)
}

// free frees the i-th live chunk after checking its bytes.
func (m *model) free(op, i int) {
	t, s := m.t, m.s
	off := m.live[i]
	c := m.chunks[off]
	m.checkBytes(op, off, c)
	if err := s.Free(off); err != nil {
		t.Fatalf("op %d: Free(%d) = %v", op, off, err)
	}
	if _, err := s.Size(off); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("op %d: Size(%d) after Free = %v, want ErrCorrupt", op, off, err)
	}
	for u := m.unit(off); u < m.unit(off)+c.csize/8; u++ {
		m.owner[u] = 0
	}
	m.use(off, c, -1)
	delete(m.chunks, off)
	m.live[i] = m.live[len(m.live)-1]
	m.live = m.live[:len(m.live)-1]
}

func (m *model) checkBytes(op int, off uint32, c mchunk) {
	for k := 0; k < c.size; k++ {
		if got := m.s.mem[int(off)+k]; got != c.fill {
			m.t.Fatalf("op %d: chunk %d (%+v) byte %d = %#x, want %#x", op, off, c, k, got, c.fill)
		}
	}
}

// want returns the free bytes and free pages the model expects, counted as
// Check counts them: whole free pages, and the free chunks of small pages.
func (m *model) want() (freeBytes int64, freePages int) {
	class, used := m.class, m.used
	ps := int(m.s.pageSize)
	for p := range class {
		switch {
		case class[p] == 0:
			freeBytes += int64(ps)
			freePages++
		case class[p] > 0:
			n := min(ps/class[p], maxChunks)
			freeBytes += int64((n - used[p]) * class[p])
		}
	}
	return freeBytes, freePages
}

// fits explains why Alloc(size) should have succeeded, or returns "".
func (m *model) fits(size int) string {
	class, used := m.class, m.used
	ps := int(m.s.pageSize)
	if isSmall(size, ps) {
		cs := m.s.ChunkSize(size)
		for p := range class {
			if class[p] == 0 {
				return fmt.Sprintf("page %d is free", p)
			}
			if class[p] == cs && used[p] < min(ps/cs, maxChunks) {
				return fmt.Sprintf("page %d of class %d has %d chunks used", p, cs, used[p])
			}
		}
		return ""
	}
	need, run := (size+ps-1)/ps, 0
	for p := range class {
		if class[p] != 0 {
			run = 0
			continue
		}
		if run++; run >= need {
			return fmt.Sprintf("pages %d..%d are free", p-need+1, p)
		}
	}
	return ""
}

// verify compares the slab with the model: counters exactly, and, when full,
// Check, ForEach and every chunk's bytes.
func (m *model) verify(op int, full bool) {
	t, s := m.t, m.s
	wantBytes, wantPages := m.want()
	if got := s.FreeBytes(); got != wantBytes {
		t.Fatalf("op %d: FreeBytes() = %d, want %d", op, got, wantBytes)
	}
	if got := s.FreePages(); got != wantPages {
		t.Fatalf("op %d: FreePages() = %d, want %d", op, got, wantPages)
	}
	if !full {
		return
	}
	if err := s.Check(); err != nil {
		t.Fatalf("op %d: Check() = %v", op, err)
	}
	got := map[uint32]int{}
	s.ForEach(func(off uint32, size int) bool {
		got[off] = size
		return true
	})
	if len(got) != len(m.chunks) {
		t.Fatalf("op %d: ForEach saw %d chunks, want %d", op, len(got), len(m.chunks))
	}
	for off, c := range m.chunks {
		if got[off] != c.csize {
			t.Fatalf("op %d: ForEach size of %d = %d, want %d", op, off, got[off], c.csize)
		}
		m.checkBytes(op, off, c)
	}
}

// randSize draws sizes from 1 to 2048 and page runs above, with the class
// boundaries and the page size itself more likely than chance.
func randSize(r *rand.Rand, pageSize int) int {
	switch k := r.IntN(100); {
	case k < 45:
		return 1 + r.IntN(128)
	case k < 70:
		return 129 + r.IntN(maxSmall-128)
	case k < 80:
		c := int(classSizes[r.IntN(numClasses)])
		return c + r.IntN(3) - 1 // just below, at, just above a class
	case k < 85:
		return pageSize/2 + r.IntN(3) - 1
	case k < 90:
		return pageSize*(1+r.IntN(3)) + r.IntN(3) - 1
	default:
		return maxSmall + 1 + r.IntN(4*pageSize)
	}
}

func TestModel(t *testing.T) {
	tests := []struct {
		region, pageSize, ops int
	}{
		{512 << 10, 4096, 60000},
		{128 << 10, 512, 60000},
		{256 << 10, 8192, 30000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("region=%d/page=%d", tt.region, tt.pageSize), func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			s := newSlab(t, tt.region, tt.pageSize)
			emptyBytes, emptyPages := s.FreeBytes(), s.FreePages()
			if emptyBytes != s.Capacity() || emptyPages != s.Pages() {
				t.Fatalf("empty: FreeBytes %d, FreePages %d, want %d, %d", emptyBytes, emptyPages, s.Capacity(), s.Pages())
			}
			m := newModel(t, s)
			// Phases that fill the region and phases that drain it, so that
			// both ErrNoMemory and page reuse happen.
			freePct, full, maxLive := 40, 0, 0
			for op := 0; op < tt.ops; op++ {
				if op%2000 == 0 {
					freePct = 20 + r.IntN(20) // fill
					if op%4000 != 0 {
						freePct = 55 + r.IntN(25) // drain
					}
				}
				if len(m.live) > 0 && r.IntN(100) < freePct {
					m.free(op, r.IntN(len(m.live)))
				} else {
					n := len(m.live)
					m.alloc(op, randSize(r, tt.pageSize), byte(r.Uint32()))
					if len(m.live) == n {
						full++
					}
				}
				maxLive = max(maxLive, len(m.live))
				m.verify(op, op%500 == 0)
			}
			t.Logf("%d ops: %d Allocs found no memory, at most %d chunks live", tt.ops, full, maxLive)
			if full == 0 {
				t.Fatalf("no Alloc found the region full: the model test does not reach ErrNoMemory")
			}
			m.verify(tt.ops, true)
			for len(m.live) > 0 {
				m.free(tt.ops, r.IntN(len(m.live)))
			}
			m.verify(tt.ops, true)
			if s.FreeBytes() != emptyBytes || s.FreePages() != emptyPages {
				t.Fatalf("after freeing all: FreeBytes %d, FreePages %d, want %d, %d", s.FreeBytes(), s.FreePages(), emptyBytes, emptyPages)
			}
			if h := s.hdr(); h.FreeRuns != 1 || s.desc(0).Run != s.npages {
				t.Fatalf("after freeing all: free runs start at %d with %d pages, want one run of %d", h.FreeRuns, s.desc(0).Run, s.npages)
			}
			if got := s.Stats(); len(got) != 0 {
				t.Fatalf("after freeing all: Stats() = %+v, want none", got)
			}
		})
	}
}

func TestChunkSizeMatchesAlloc(t *testing.T) {
	for _, ps := range []int{512, 4096, 16384} {
		t.Run(fmt.Sprint("page=", ps), func(t *testing.T) {
			s := newSlab(t, 64*ps, ps)
			for size := -1; size <= 3*ps+1; size++ {
				off, err := s.Alloc(size)
				if err != nil {
					t.Fatalf("Alloc(%d) = %v", size, err)
				}
				got, err := s.Size(off)
				if err != nil {
					t.Fatalf("Size(Alloc(%d)) = %v", size, err)
				}
				if want := s.ChunkSize(size); got != want {
					t.Fatalf("Size(Alloc(%d)) = %d, ChunkSize(%d) = %d", size, got, size, want)
				}
				if got < size {
					t.Fatalf("Size(Alloc(%d)) = %d, smaller than asked", size, got)
				}
				if err := s.Free(off); err != nil {
					t.Fatalf("Free(%d) = %v", off, err)
				}
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestClasses(t *testing.T) {
	tests := []struct {
		size, want int
	}{
		{1, 16}, {16, 16}, {17, 24}, {49, 56}, {56, 56}, {57, 64}, {128, 128},
		{129, 144}, {248, 248}, {249, 272}, {256, 272}, {273, 288}, {505, 576},
		{1017, 1152}, {2040, 2040}, {2041, 4088}, {4088, 4088}, {4089, 8184},
	}
	for _, tt := range tests {
		if got := ChunkSize(tt.size, 4096); got != tt.want {
			t.Errorf("ChunkSize(%d, 4096) = %d, want %d", tt.size, got, tt.want)
		}
	}
	// Classes rise, by 8 up to 128, then by at most an eighth.
	for c := 1; c < numClasses; c++ {
		lo, hi := int(classSizes[c-1]), int(classSizes[c])
		if hi <= lo || hi%8 != 0 || (hi <= 128 && hi-lo != 8) || (hi > 128 && (hi-lo)*8 > hi) {
			t.Errorf("class %d: %d after %d", c, hi, lo)
		}
	}
	if classSizes[numClasses-1] != maxSmall {
		t.Errorf("largest class %d, want %d", classSizes[numClasses-1], maxSmall)
	}
}

// A counter entry with a 16-byte key takes 56 bytes and must not be rounded
// up further (DESIGN §2: about 64 bytes per counter with its index slot).
func TestCounterEntryClass(t *testing.T) {
	s := newSlab(t, 256<<10, 4096)
	const entry = 56
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
	if len(st) != 1 || st[0].Size != entry || st[0].Used != 200 || st[0].Pages != 3 || st[0].Free != 3*(4096/entry)-200 {
		t.Fatalf("Stats() = %+v, want one class of %d with 200 used in 3 pages", st, entry)
	}
	for _, off := range offs {
		rel := (off - s.pagesOff) % 4096
		if rel%entry != 0 || rel/entry >= 4096/entry {
			t.Fatalf("chunk %d is at %d in its page, not at a multiple of %d below %d", off, rel, entry, 4096/entry*entry)
		}
	}
}

func TestTooLargeAndNoMemory(t *testing.T) {
	s := newSlab(t, 64<<10, 4096)
	empty := s.FreeBytes()
	if _, err := s.Alloc(s.MaxAlloc() + 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Alloc(MaxAlloc()+1) = %v, want ErrTooLarge", err)
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
	if s.FreeBytes() != 0 || s.FreePages() != 0 {
		t.Fatalf("after Alloc(MaxAlloc()): %v, want nothing free", s)
	}
	for _, size := range []int{1, 56, 2048, 4096} {
		if _, err := s.Alloc(size); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("Alloc(%d) on a full region = %v, want ErrNoMemory", size, err)
		}
	}
	if got := s.hdr().Fails; got != 4 {
		t.Fatalf("Fails = %d, want 4", got)
	}
	if err := s.Free(whole); err != nil {
		t.Fatal(err)
	}

	// Fill with 16-byte chunks: every page holds exactly 256, nothing is
	// left, and a freed chunk is the next one given.
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
	if want := s.Pages() * 256; len(offs) != want {
		t.Fatalf("%d chunks of 16 fit, want %d", len(offs), want)
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
		{"inside a run", run + 100},
		{"run body page", run + 4096},
		{"free page", freePage},
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
