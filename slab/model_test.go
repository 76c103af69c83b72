package slab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
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
// of the page area each chunk owns, what each page holds, and what every
// byte of the page area must hold. The package writes two things there:
// the word of a page that Alloc takes for a class or as a run's first page,
// which it zeroes, as while the page was free or inside a run its first
// bytes were nobody's lock; and the word of each page it frees, FreeWord.
type model struct {
	t      *testing.T
	s      *Slab
	chunks map[uint32]mchunk
	live   []uint32 // keys of chunks, for random picks
	owner  []uint32 // per 8-byte unit of the page area: chunk offset, 0 = none
	class  []int    // per page: chunk size of a small page, runHead or runBody in a run, 0 free
	used   []int    // per page: live chunks of a small page
	pages  []byte   // the page area as the model wrote it
	taken  []bool   // per page: Alloc has taken it before
	takes  int      // pages Alloc took, and zeroed a word the model had set
	again  int      // of those, pages taken before, freed, and taken again
	views  int      // views of modelOwner made so far: s and those before it
}

// The model's class of the pages of an allocated run.
const (
	runHead = -1 // its first page, whose word is a lock
	runBody = -2 // the others, whose words are the chunk's bytes
)

type mchunk struct {
	size  int // asked for
	csize int // the model's refChunk(size)
	small bool
	fill  byte
}

// newModel returns a model of s, whose chunks it does not know: s must have
// none when the model's first operation runs. It writes wordPattern in
// every page's word, as the holders of the pages' locks or the owners of
// the chunks before would have left it, so that the Alloc that takes a page
// is seen to zero its word, and takes the rest of the page area as it
// finds it.
func newModel(t *testing.T, s *Slab) *model {
	m := &model{
		t: t, s: s, chunks: map[uint32]mchunk{},
		owner: make([]uint32, int(s.npages)*int(s.pageSize)/8),
		class: make([]int, s.npages),
		used:  make([]int, s.npages),
		taken: make([]bool, s.npages),
		pages: make([]byte, int(s.npages)*int(s.pageSize)),
	}
	copy(m.pages, s.mem[s.pagesOff:])
	for p := uint32(0); p < s.npages; p++ {
		m.setWord(p, wordPattern(p))
	}
	s.SetOwner(modelOwner)
	m.views = 1
	return m
}

// modelOwner is the owner of the model's view (SetOwner), which takes
// every page: each small chunk lies in a page that names it or, once the
// page was full and had a chunk freed, no owner (leave), through Rebuild
// and Restore too; and few pages with room per class name it (verify).
const modelOwner = 0x5a5a

// setWord writes v in page p's word, in the region and in the model.
func (m *model) setWord(p uint32, v uint64) {
	binary.NativeEndian.PutUint64(m.s.mem[pageStart(m.s, p):], v)
	binary.NativeEndian.PutUint64(m.pages[p*m.s.pageSize:], v)
}

// expectWord records that the package has written v in page p's word.
func (m *model) expectWord(p uint32, v uint64) {
	binary.NativeEndian.PutUint64(m.pages[p*m.s.pageSize:], v)
}

// modelWord returns what page p's word must hold.
func (m *model) modelWord(p uint32) uint64 {
	return binary.NativeEndian.Uint64(m.pages[p*m.s.pageSize:])
}

// use records that the chunk at off is allocated (+1) or freed (-1). A
// page that becomes free keeps its bytes in the package but for its word,
// which the package sets to FreeWord (never 0, so Alloc's zeroing shows
// when it takes the page again): the model expects it there.
func (m *model) use(off uint32, c mchunk, delta int) {
	ps := int(m.s.pageSize)
	p := int(pageOf(m.s, off))
	if !c.small {
		for i := 0; i < runPages(c.csize, ps); i++ {
			switch {
			case delta < 0:
				m.class[p+i] = 0
				m.expectWord(uint32(p+i), FreeWord)
			case i == 0:
				m.class[p+i] = runHead
			default:
				m.class[p+i] = runBody
			}
		}
		return
	}
	m.class[p] = c.csize
	m.used[p] += delta
	if m.used[p] == 0 {
		m.class[p] = 0
		m.expectWord(uint32(p), FreeWord)
	}
}

func (m *model) unit(off uint32) int { return int(off-m.s.pagesOff) / 8 }

// isWord reports whether 8-byte unit u of the page area is in a page's word.
func (m *model) isWord(u int) bool { return u*8%int(m.s.pageSize) < pageWord }

// placed explains why a chunk of c at off is not where the geometry puts
// one, or returns "".
func (m *model) placed(off uint32, c mchunk) string {
	s, ps := m.s, int(m.s.pageSize)
	end := s.pagesOff + s.npages*s.pageSize
	if off < s.pagesOff || off >= end {
		return fmt.Sprintf("outside the pages [%d, %d)", s.pagesOff, end)
	}
	p := pageOf(s, off)
	rel := int(off - pageStart(s, p))
	if !c.small {
		if rel != pageWord || int(p)+runPages(c.csize, ps) > int(s.npages) {
			return fmt.Sprintf("at %d in page %d, want a run of %d pages starting at %d in its page", rel, p, runPages(c.csize, ps), pageWord)
		}
		return ""
	}
	if rel < pageWord || (rel-pageWord)%c.csize != 0 || (rel-pageWord)/c.csize >= perPage(c.csize, ps) {
		return fmt.Sprintf("at %d in page %d, want %d + i*%d for i < %d", rel, p, pageWord, c.csize, perPage(c.csize, ps))
	}
	return ""
}

// write fills the first n bytes of the chunk at off with fill, as its
// owner would, and records them.
func (m *model) write(off uint32, n int, fill byte) {
	for i := 0; i < n; i++ {
		m.s.mem[int(off)+i] = fill
		m.pages[int(off-m.s.pagesOff)+i] = fill
	}
}

// alloc allocates size bytes and checks the chunk against the model.
func (m *model) alloc(op, size int, fill byte) {
	t, s := m.t, m.s
	off, err := s.Alloc(size)
	maxAlloc := int(s.npages)*int(s.pageSize) - pageWord // all pages as one run
	switch {
	case errors.Is(err, ErrTooLarge):
		if size <= maxAlloc {
			t.Fatalf("op %d: Alloc(%d) = ErrTooLarge, but %d pages hold %d", op, size, s.npages, maxAlloc)
		}
		return
	case size > maxAlloc:
		t.Fatalf("op %d: Alloc(%d) = %d, %v, want ErrTooLarge above %d", op, size, off, err, maxAlloc)
	case errors.Is(err, ErrNoMemory):
		if why := m.fits(size); why != "" {
			t.Fatalf("op %d: Alloc(%d) = ErrNoMemory, but %s", op, size, why)
		}
		return
	case err != nil:
		t.Fatalf("op %d: Alloc(%d) = %d, %v", op, size, off, err)
	}
	csize, small := refChunk(size, int(s.pageSize))
	c := mchunk{size, csize, small, fill}
	if got := s.ChunkSize(size); got != csize {
		t.Fatalf("op %d: ChunkSize(%d) = %d, want %d", op, size, got, csize)
	}
	if why := m.placed(off, c); why != "" {
		t.Fatalf("op %d: Alloc(%d) = %d, %s", op, size, off, why)
	}
	if got, err := s.Size(off); err != nil || got != csize || got < size {
		t.Fatalf("op %d: Size(Alloc(%d) = %d) = %d, %v, want %d", op, size, off, got, err, csize)
	}
	first := m.unit(off) / (int(s.pageSize) / 8)
	m.checkTaken(op, size, off, c)
	for u := m.unit(off); u < m.unit(off)+csize/8; u++ {
		if o := m.owner[u]; o != 0 {
			t.Fatalf("op %d: Alloc(%d) = %d overlaps the chunk at %d (%+v)", op, size, off, o, m.chunks[o])
		}
		// Only a run's chunk covers words: those of its pages after
		// the first, which hold no lock while the run is allocated.
		if page := u / (int(s.pageSize) / 8); m.isWord(u) && (small || page == first) {
			t.Fatalf("op %d: Alloc(%d) = %d covers the word of page %d", op, size, off, page)
		}
		m.owner[u] = off
	}
	m.write(off, size, fill)
	m.chunks[off] = c
	m.live = append(m.live, off)
	m.use(off, c, +1)
}

// checkTaken checks the page words right after Alloc(size) returned the
// chunk c at off: Alloc zeroes the word of the page it takes, a free page
// for a small chunk or a run's first page, and writes no other word. The
// model then writes wordPattern in the taken page's word, as the holder of
// its lock would, so that a later write of the word by the package shows.
func (m *model) checkTaken(op, size int, off uint32, c mchunk) {
	t, s := m.t, m.s
	p := pageOf(s, off)
	took := !c.small || m.class[p] == 0
	if c.small && m.class[p] != 0 && m.class[p] != c.csize {
		t.Fatalf("op %d: Alloc(%d) = %d, a chunk of %d in page %d of class %d (negative: in a run)", op, size, off, c.csize, p, m.class[p])
	}
	if took && m.modelWord(p) == 0 {
		t.Fatalf("test bug: page %d's word was 0 before Alloc(%d) took it: its zeroing cannot show", p, size)
	}
	for q := uint32(0); q < s.npages; q++ {
		want := m.modelWord(q)
		if q == p && took {
			want = 0
		}
		if got := word(s, q); got != want {
			what := "no page"
			if took {
				what = fmt.Sprintf("page %d", p)
			}
			t.Fatalf("op %d: Alloc(%d) = %d took %s; page %d's word = %#x, want %#x", op, size, off, what, q, got, want)
		}
	}
	if !took {
		return
	}
	m.takes++
	if m.taken[p] {
		m.again++
	}
	m.taken[p] = true
	m.setWord(p, wordPattern(p))
}

// drop removes the i-th live chunk from the model, whose bytes the caller
// checked: the package frees it, by Free or by Forget and Rebuild.
func (m *model) drop(op, i int) uint32 {
	off := m.live[i]
	c := m.chunks[off]
	for u := m.unit(off); u < m.unit(off)+c.csize/8; u++ {
		m.owner[u] = 0
	}
	m.use(off, c, -1)
	delete(m.chunks, off)
	m.live[i] = m.live[len(m.live)-1]
	m.live = m.live[:len(m.live)-1]
	return off
}

// free frees the i-th live chunk after checking its bytes.
func (m *model) free(op, i int) {
	t, s := m.t, m.s
	off := m.live[i]
	m.checkBytes(op, off, m.chunks[off])
	if err := s.Free(off); err != nil {
		t.Fatalf("op %d: Free(%d) = %v", op, off, err)
	}
	if _, err := s.Size(off); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("op %d: Size(%d) after Free = %v, want ErrCorrupt", op, off, err)
	}
	m.drop(op, i)
}

// forget frees the i-th live chunk the way repair does: Forget, then
// Rebuild.
func (m *model) forget(op, i int) {
	t, s := m.t, m.s
	m.checkBytes(op, m.live[i], m.chunks[m.live[i]])
	off := m.drop(op, i)
	s.Forget(off)
	s.Rebuild()
	if _, err := s.Size(off); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("op %d: Size(%d) after Forget and Rebuild = %v, want ErrCorrupt", op, off, err)
	}
}

// restore overwrites the header, as a stray write could, and recovers the
// region with Restore, which must keep every chunk.
func (m *model) restore(op int) {
	s := m.s
	clear(s.mem[:hdrSize])
	r, err := Restore(s.mem, int(s.pageSize))
	if err != nil {
		m.t.Fatalf("op %d: Restore = %v", op, err)
	}
	if r.npages != s.npages || r.pagesOff != s.pagesOff || r.pageSize != s.pageSize {
		m.t.Fatalf("op %d: Restore found %d pages of %d at %d, want %d of %d at %d", op, r.npages, r.pageSize, r.pagesOff, s.npages, s.pageSize, s.pagesOff)
	}
	r.SetOwner(modelOwner)
	m.s = r
	m.views++
}

func (m *model) checkBytes(op int, off uint32, c mchunk) {
	for k := 0; k < c.size; k++ {
		if got := m.s.mem[int(off)+k]; got != c.fill {
			m.t.Fatalf("op %d: chunk %d (%+v) byte %d = %#x, want %#x", op, off, c, k, got, c.fill)
		}
	}
}

// checkWords checks that every page's word holds what the model last wrote
// there: wordPattern, FreeWord in a page the package freed, or a run's
// bytes for the inner pages of a run. The package writes a word only in
// the Alloc that takes its page, which alloc checks and the model then
// overwrites, and as it frees the page. It also checks that
// PageLockAt and PageLock give the word of a small page or a run's first
// page, for any offset in the page, and nil for a free page or a run's
// other pages, and nil outside the pages.
func (m *model) checkWords(op int) {
	s := m.s
	for p := uint32(0); p < s.npages; p++ {
		want := m.modelWord(p)
		if got := word(s, p); got != want {
			m.t.Fatalf("op %d: page %d's word = %#x, want %#x (pattern %#x)", op, p, got, want, wordPattern(p))
		}
		var lock *uint64
		if c := m.class[p]; c > 0 || c == runHead {
			lock = wordAt(s, p)
		}
		start := pageStart(s, p)
		for _, off := range []uint32{start, start + pageWord, start + s.pageSize - 1} {
			if got := s.PageLock(off); got != lock {
				m.t.Fatalf("op %d: PageLock(%d) in page %d (class %d) = %p, want %p", op, off, p, m.class[p], got, lock)
			}
		}
		if got := s.PageLockAt(int(p)); got != lock {
			m.t.Fatalf("op %d: PageLockAt(%d) (class %d) = %p, want %p", op, p, m.class[p], got, lock)
		}
	}
	for _, off := range []uint32{0, s.pagesOff - 1, pageStart(s, s.npages), ^uint32(0)} {
		if got := s.PageLock(off); got != nil {
			m.t.Fatalf("op %d: PageLock(%d) outside the pages = %p, want nil", op, off, got)
		}
	}
}

// checkPages checks that the whole page area holds what the model wrote.
func (m *model) checkPages(op int) {
	s := m.s
	got := s.mem[s.pagesOff : s.pagesOff+s.npages*s.pageSize]
	for i := range got {
		if got[i] != m.pages[i] {
			owner := m.owner[i/8]
			m.t.Fatalf("op %d: byte %d of the pages (page %d, at %d) = %#x, want %#x (chunk at %d)", op, i, i/int(s.pageSize), i%int(s.pageSize), got[i], m.pages[i], owner)
		}
	}
}

// want returns the free bytes and free pages the model expects, counted as
// Check counts them: whole free pages, word included, and the free chunks
// of small pages.
func (m *model) want() (freeBytes int64, freePages int) {
	class, used := m.class, m.used
	ps := int(m.s.pageSize)
	for p := range class {
		switch {
		case class[p] == 0:
			freeBytes += int64(ps)
			freePages++
		case class[p] > 0:
			freeBytes += int64((perPage(class[p], ps) - used[p]) * class[p])
		}
	}
	return freeBytes, freePages
}

// fits explains why Alloc(size) should have succeeded, or returns "".
func (m *model) fits(size int) string {
	class, used := m.class, m.used
	ps := int(m.s.pageSize)
	cs, small := refChunk(size, ps)
	if small {
		for p := range class {
			if class[p] == 0 {
				return fmt.Sprintf("page %d is free", p)
			}
			if class[p] == cs && used[p] < perPage(cs, ps) {
				return fmt.Sprintf("page %d of class %d has %d chunks used", p, cs, used[p])
			}
		}
		return ""
	}
	need, run := runPages(cs, ps), 0
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

// verify compares the slab with the model: counters and page words exactly,
// and, when full, Check, ForEach, every chunk's bytes and the whole page
// area.
func (m *model) verify(op int, full bool) {
	t, s := m.t, m.s
	wantBytes, wantPages := m.want()
	if got := s.FreeBytes(); got != wantBytes {
		t.Fatalf("op %d: FreeBytes() = %d, want %d", op, got, wantBytes)
	}
	if got := s.FreePages(); got != wantPages {
		t.Fatalf("op %d: FreePages() = %d, want %d", op, got, wantPages)
	}
	m.checkWords(op)
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
		p, _ := s.pageOf(off)
		if run := s.desc(p).Run; c.small && !s.Mine(off) && run != 0 || !c.small && s.Mine(off) {
			t.Fatalf("op %d: Mine(%d) = %t, page names %#x, for a chunk of %d bytes (small %t): the view took every page", op, off, s.Mine(off), run, c.size, c.small)
		}
	}
	m.checkHeld(op)
	m.checkPages(op)
}

// checkHeld checks that each view holds at most 1+heldSlots pages with
// room per class: the page it fills, and pages it freed a chunk in that it
// holds in a slot; other pages it filled that had a chunk freed since
// name no owner. The views of modelOwner made one after the other
// (Restore, Attach) may each have left as many.
func (m *model) checkHeld(op int) {
	s := m.s
	var held [numClasses]int
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		if d.Kind == kindSmall && d.Run == modelOwner && int(d.Used) < chunksPerPage(int(d.Class), s.pageSize) {
			if held[d.Class]++; held[d.Class] > m.views*(1+heldSlots) {
				m.t.Fatalf("op %d: page %d is page %d with room of class %d that %d views hold", op, p, held[d.Class], classSizes[d.Class], m.views)
			}
		}
	}
}

// randSize draws sizes from 1 to maxSmall and page runs above, with the
// class boundaries, half a page after its word, and whole pages with and
// without the word more likely than chance.
func randSize(r *rand.Rand, pageSize int) int {
	switch k := r.IntN(100); {
	case k < 45:
		return 1 + r.IntN(128)
	case k < 70:
		return 129 + r.IntN(maxSmall-128)
	case k < 80:
		c := int(classSizes[r.IntN(numClasses)])
		return c + r.IntN(3) - 1 // just below, at, just above a class
	case k < 83:
		return (pageSize-pageWord)/2 + r.IntN(3) - 1
	case k < 85:
		return pageSize/2 + r.IntN(3) - 1
	case k < 88:
		return pageSize*(1+r.IntN(3)) - pageWord + r.IntN(3) - 1
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
