package slab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shmzone/shmzone/internal/testutil"
)

// wordAt returns the address of page p's word in the region of s, computed
// from the geometry, to compare PageLock's answers with.
func wordAt(s *Slab, p uint32) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.mem[pageStart(s, p)]))
}

// PageLock returns the word at the start of the page that holds an offset,
// for any offset in the page, when the page holds chunks of a class or
// begins a run, on a view from Format, Attach or Restore; for a chunk that
// is its page's word, for a run's chunk its first page's. It returns nil
// for a free page, for the other pages of a run, whose first bytes are the
// run's chunk, and outside the pages; PageLockAt agrees page by page.
// PageWord gives each page's word whatever the page holds, and nothing
// outside the pages. The region starts as random bytes:
// Alloc zeroes the word of each page it takes, and no chunk covers the word
// of its page, so a store through PageLock changes no chunk.
func TestPageLock(t *testing.T) {
	for _, ps := range []int{512, 4096, 1 << 16} {
		t.Run(fmt.Sprint("page=", ps), func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			mem := alignedMem(10 * ps)
			for i := range mem {
				mem[i] = byte(1 + r.IntN(255))
			}
			orig := slices.Clone(mem)
			s, err := Format(mem, ps)
			if err != nil {
				t.Fatalf("Format = %v", err)
			}
			end := pageStart(s, s.npages)
			if int(end)+ps/2 > len(s.mem) {
				t.Fatalf("test bug: %d pages end at %d, want a tail of half a page in %d bytes", s.npages, end, len(s.mem))
			}
			type chunk struct {
				off  uint32
				size int
				fill byte
			}
			var chunks []chunk
			taken := make([]bool, s.npages) // nothing is freed while filling: each page is taken once
			sizes := []int{1, ps - pageWord, 56, 2*ps - pageWord + 1, 248, (ps - pageWord) / 2, 100, 16}
			for i := 0; ; i++ {
				size := sizes[i%len(sizes)]
				off, err := s.Alloc(size)
				if errors.Is(err, ErrNoMemory) {
					break
				}
				if err != nil {
					t.Fatalf("Alloc(%d) = %v", size, err)
				}
				n, err := s.Size(off)
				if err != nil {
					t.Fatalf("Size(%d) = %v", off, err)
				}
				chunks = append(chunks, chunk{off, n, byte(1 + r.IntN(255))})
				taken[pageOf(s, off)] = true
			}
			// What each page is, from the chunks: a small page, a run's
			// first page or another page of a run; free if none.
			const (
				free = iota
				small
				head
				body
			)
			kind := make([]int, s.npages)
			classify := func() {
				clear(kind)
				for _, c := range chunks {
					first, last := pageOf(s, c.off), pageOf(s, c.off+uint32(c.size)-1)
					if _, isSmall := refChunk(c.size, ps); isSmall {
						kind[first] = small
						continue
					}
					kind[first] = head
					for p := first + 1; p <= last; p++ {
						kind[p] = body
					}
				}
			}
			// Free every chunk of every other small page, in page order,
			// and every run but the longest, but for the last page's, so
			// that free pages lie among small pages and runs.
			classify()
			longest := chunks[0]
			for _, c := range chunks {
				if c.size > longest.size {
					longest = c
				}
			}
			drop := make([]bool, s.npages)
			smalls := 0
			for p := uint32(0); p+1 < s.npages; p++ {
				switch kind[p] {
				case small:
					drop[p] = smalls%2 == 1
					smalls++
				case head:
					drop[p] = p != pageOf(s, longest.off)
				}
			}
			before := slices.Clone(kind)
			var live []chunk
			for _, c := range chunks {
				if drop[pageOf(s, c.off)] {
					if err := s.Free(c.off); err != nil {
						t.Fatalf("Free(%d) = %v", c.off, err)
					}
					continue
				}
				live = append(live, c)
			}
			chunks = live
			classify()
			var counts [4]int
			for _, k := range kind {
				counts[k]++
			}
			if counts[free] == 0 || counts[small] == 0 || counts[head] == 0 || counts[body] == 0 || kind[s.npages-1] == free {
				t.Fatalf("test bug: %d free pages, %d small, %d runs, %d pages inside runs, last page %d; want some of each and the last page used", counts[free], counts[small], counts[head], counts[body], kind[s.npages-1])
			}
			// Alloc zeroed the words of the pages it took, for a class or
			// as a run's first page, Free wrote FreeWord in the word of
			// each page it freed, a run's other pages too, and Alloc and
			// Free wrote no other byte of the pages: the others keep the
			// random bytes, the words of a live run's other pages too. The
			// chunks are filled only now, as their owners would.
			var freeWord [pageWord]byte
			binary.NativeEndian.PutUint64(freeWord[:], FreeWord)
			for i := int(s.pagesOff); i < len(mem); i++ {
				p, rel := pageOf(s, uint32(i)), (i-int(s.pagesOff))%ps
				want := orig[i]
				switch {
				case p >= s.npages || rel >= pageWord:
				case before[p] != free && kind[p] == free:
					want = freeWord[rel]
				case taken[p]:
					want = 0
				}
				if mem[i] != want {
					t.Fatalf("byte %d (at %d in page %d, taken %v) = %#x, want %#x", i, rel, p, p < s.npages && taken[p], mem[i], want)
				}
			}
			for p := uint32(0); p < s.npages; p++ {
				if k := kind[p]; (k == small || k == head) != taken[p] && k != free {
					t.Fatalf("test bug: page %d of kind %d, taken %v", p, k, taken[p])
				}
			}
			for _, c := range chunks {
				for k := 0; k < c.size; k++ {
					s.mem[int(c.off)+k] = c.fill
				}
			}
			attached, err := Attach(s.mem)
			if err != nil {
				t.Fatalf("Attach = %v", err)
			}
			restored, err := Restore(s.mem, ps)
			if err != nil {
				t.Fatalf("Restore = %v", err)
			}
			views := []struct {
				name string
				v    *Slab
			}{{"Format", s}, {"Attach", attached}, {"Restore", restored}}
			for _, view := range views {
				v := view.v
				for p := uint32(0); p < s.npages; p++ {
					var want *uint64
					if k := kind[p]; k == small || k == head {
						want = wordAt(s, p)
					}
					if got := v.PageLockAt(int(p)); got != want {
						t.Fatalf("%s: PageLockAt(%d) of kind %d = %p, want %p", view.name, p, kind[p], got, want)
					}
					start := pageStart(s, p)
					for _, off := range []uint32{start, start + 1, start + pageWord - 1, start + pageWord,
						start + uint32(ps/2), start + uint32(ps-1), start + uint32(r.IntN(ps))} {
						if got := v.PageLock(off); got != want {
							t.Fatalf("%s: PageLock(%d) in page %d of kind %d = %p, want %p (word at %d)", view.name, off, p, kind[p], got, want, start)
						}
						// PageWord reads no metadata: the page's word
						// whatever the page is.
						if got := v.PageWord(off); got != wordAt(s, p) {
							t.Fatalf("%s: PageWord(%d) in page %d = %p, want %p", view.name, off, p, got, wordAt(s, p))
						}
					}
				}
				for _, c := range chunks {
					first, last := pageOf(s, c.off), pageOf(s, c.off+uint32(c.size)-1)
					if got := v.PageLock(c.off); got != wordAt(s, first) {
						t.Fatalf("%s: PageLock(%d) of a chunk of %d bytes = %p, want page %d's word", view.name, c.off, c.size, got, first)
					}
					var want *uint64 // a run's end, in a page after its first
					if last == first {
						want = wordAt(s, first)
					}
					if got := v.PageLock(c.off + uint32(c.size) - 1); got != want {
						t.Fatalf("%s: PageLock(%d) at the end of a chunk of %d bytes in pages %d..%d = %p, want %p", view.name, c.off+uint32(c.size)-1, c.size, first, last, got, want)
					}
				}
				for _, off := range []uint32{0, 8, uint32(descStart), s.pagesOff - 1, end, end + 1,
					end + uint32(ps/2) - 1, uint32(len(s.mem)) - 1, uint32(len(s.mem)), ^uint32(0)} {
					if got := v.PageLock(off); got != nil {
						t.Fatalf("%s: PageLock(%d) outside the pages [%d, %d) = %p, want nil", view.name, off, s.pagesOff, end, got)
					}
					if got := v.PageWord(off); got != nil {
						t.Fatalf("%s: PageWord(%d) outside the pages [%d, %d) = %p, want nil", view.name, off, s.pagesOff, end, got)
					}
				}
			}
			// The words are aligned for atomics, and storing through them
			// changes no chunk and no metadata.
			meta := slices.Clone(s.mem[:s.pagesOff])
			for _, c := range chunks {
				w := s.PageLock(c.off)
				if uintptr(unsafe.Pointer(w))%8 != 0 {
					t.Fatalf("PageLock(%d) = %p, not 8-byte aligned", c.off, w)
				}
				p := pageOf(s, c.off)
				if !atomic.CompareAndSwapUint64(w, 0, wordPattern(p)) && atomic.LoadUint64(w) != wordPattern(p) {
					t.Fatalf("page %d's word = %#x, want 0 (Alloc) or %#x", p, atomic.LoadUint64(w), wordPattern(p))
				}
				if got := word(s, p); got != wordPattern(p) {
					t.Fatalf("page %d's word read from its bytes = %#x after a store through PageLock(%d), want %#x", p, got, c.off, wordPattern(p))
				}
			}
			for _, c := range chunks {
				for k := 0; k < c.size; k++ {
					if got := s.mem[int(c.off)+k]; got != c.fill {
						t.Fatalf("chunk %d of %d bytes: byte %d = %#x after stores through PageLock, want %#x", c.off, c.size, k, got, c.fill)
					}
				}
				if n, err := s.Size(c.off); err != nil || n != c.size {
					t.Fatalf("Size(%d) after stores through PageLock = %d, %v, want %d", c.off, n, err, c.size)
				}
			}
			if !slices.Equal(meta, s.mem[:s.pagesOff]) {
				t.Fatalf("stores through PageLock changed the metadata")
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check() after stores through PageLock = %v", err)
			}
		})
	}
}

// Alloc zeroes the word of a page it takes, for a class or as a run's
// first page, and writes no other word; Free, and Rebuild (also in
// Restore) after Forget, write FreeWord in the word of each page they
// free and no other; Attach and Check write none. The model writes
// wordPattern in every word, and again in the word of each page Alloc
// takes once it has seen it zeroed, runs random operations of every kind,
// and checks every word, and PageLock and PageLockAt of every page, after
// each one. The other
// words that change are those inside a run's chunk (the words of its pages
// after the first), which the model itself writes as a chunk's owner would.
func TestPageWords(t *testing.T) {
	tests := []struct {
		region, pageSize, ops int
	}{
		{256 << 10, 4096, 20000},
		{64 << 10, 512, 20000},
		{256 << 10, 8192, 10000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("region=%d/page=%d", tt.region, tt.pageSize), func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			m := newModel(t, newSlab(t, tt.region, tt.pageSize))
			var counts [7]int
			for op := 0; op < tt.ops; op++ {
				switch k := r.IntN(100); {
				case k < 2:
					m.s.Rebuild()
					counts[0]++
				case k < 4:
					m.restore(op)
					counts[1]++
				case k < 5:
					s, err := Attach(m.s.mem)
					if err != nil {
						t.Fatalf("op %d: Attach = %v", op, err)
					}
					s.SetOwner(modelOwner) // the same owner's view again
					m.s = s
					m.views++
					counts[2]++
				case k < 7:
					if err := m.s.Check(); err != nil {
						t.Fatalf("op %d: Check() = %v", op, err)
					}
					counts[3]++
				case k < 10 && len(m.live) > 0:
					m.forget(op, r.IntN(len(m.live)))
					counts[4]++
				case k < 52 && len(m.live) > 0:
					m.free(op, r.IntN(len(m.live)))
					counts[5]++
				default:
					m.alloc(op, randSize(r, tt.pageSize), byte(r.Uint32()))
					counts[6]++
				}
				m.verify(op, op%250 == 0)
			}
			t.Logf("Rebuild %d, Restore %d, Attach %d, Check %d, Forget %d, Free %d, Alloc %d", counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6])
			for len(m.live) > 0 {
				m.free(tt.ops, r.IntN(len(m.live)))
			}
			m.s.Rebuild()
			m.restore(tt.ops)
			m.verify(tt.ops, true)
			t.Logf("Alloc took %d pages, %d of them freed before", m.takes, m.again)
			if m.again == 0 {
				t.Fatalf("no page was taken, freed and taken again: the test does not see Alloc zero a word a lock's holder left")
			}
		})
	}
}

// Format writes the region's metadata, and of the pages only the words of
// those a region in use had taken (for a class, or in a run), FreeWord, as
// Free would: never a byte over random bytes, as a new zone's file is zero
// anyway, and no other byte of a region in use. The region it leaves is
// all free: PageLock of every page is nil, and the Alloc that takes a page
// then zeroes its word.
func TestFormatWritesOnlyTakenWords(t *testing.T) {
	for _, ps := range []int{512, 4096, 1 << 16} {
		t.Run(fmt.Sprint("page=", ps), func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			mem := alignedMem(6*ps + ps/2)
			for i := range mem {
				mem[i] = byte(1 + r.IntN(255))
			}
			before := slices.Clone(mem)
			s, err := Format(mem, ps)
			if err != nil {
				t.Fatal(err)
			}
			checkFormatted := func(when string, before []byte) {
				t.Helper()
				for i := int(s.pagesOff); i < len(mem); i++ {
					if mem[i] != before[i] {
						rel := (i - int(s.pagesOff)) % ps
						t.Fatalf("%s: byte %d (at %d in page %d) = %#x, want %#x", when, i, rel, (i-int(s.pagesOff))/ps, mem[i], before[i])
					}
				}
				if s.FreeBytes() != s.Capacity() || s.FreePages() != s.Pages() {
					t.Fatalf("%s: %v, want all free", when, s)
				}
				if err := s.Check(); err != nil {
					t.Fatalf("%s: Check() = %v", when, err)
				}
				for p := uint32(0); p < s.npages; p++ {
					if got := s.PageLockAt(int(p)); got != nil {
						t.Fatalf("%s: PageLockAt(%d) of a free page = %p, want nil", when, p, got)
					}
					if got := s.PageLock(pageStart(s, p) + pageWord); got != nil {
						t.Fatalf("%s: PageLock of free page %d = %p, want nil", when, p, got)
					}
				}
			}
			checkFormatted("Format over random bytes", before)

			// Format again over a region in use, its words taken.
			m := newModel(t, s)
			for op := 0; op < 50; op++ {
				m.alloc(op, randSize(r, ps), byte(r.Uint32()))
				m.verify(op, false)
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			if m.takes == 0 {
				t.Fatalf("test bug: 50 Allocs took no page")
			}
			before = slices.Clone(mem)
			for p := uint32(0); p < s.npages; p++ {
				if m.class[p] != 0 {
					binary.NativeEndian.PutUint64(before[pageStart(s, p):], FreeWord)
				}
			}
			if s, err = Format(mem, ps); err != nil {
				t.Fatal(err)
			}
			checkFormatted("Format over a region in use", before)

			// The words the region kept are no lock's any more: the Alloc
			// that takes a page zeroes its word, and nothing else writes it.
			m = newModel(t, s)
			for op := 0; op < 50; op++ {
				m.alloc(op, randSize(r, ps), byte(r.Uint32()))
				m.verify(op, op%10 == 0)
			}
			if m.takes == 0 {
				t.Fatalf("test bug: 50 Allocs after Format took no page")
			}
		})
	}
}
