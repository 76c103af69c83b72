package slab

import (
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
// for any offset in the page, on a view from Format, Attach or Restore; for
// a chunk that is its page's word, for a run's chunk its first page's. It
// returns nil outside the pages. No chunk covers the word of its page, so a
// store through PageLock changes no chunk.
func TestPageLock(t *testing.T) {
	for _, ps := range []int{512, 4096, 1 << 16} {
		t.Run(fmt.Sprint("page=", ps), func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			s := newSlab(t, 10*ps, ps)
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
			var runs, inLast int
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
				c := chunk{off, n, byte(1 + r.IntN(255))}
				for k := 0; k < n; k++ {
					s.mem[int(off)+k] = c.fill
				}
				chunks = append(chunks, c)
				if _, small := refChunk(size, ps); !small && n > ps {
					runs++
				}
				if pageOf(s, off) == s.npages-1 {
					inLast++
				}
			}
			if runs == 0 || inLast == 0 {
				t.Fatalf("test bug: %d chunks, %d runs of 2 pages or more, %d in the last page; want some of each", len(chunks), runs, inLast)
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
					start := pageStart(s, p)
					for _, off := range []uint32{start, start + 1, start + pageWord - 1, start + pageWord,
						start + uint32(ps/2), start + uint32(ps-1), start + uint32(r.IntN(ps))} {
						if got, want := v.PageLock(off), wordAt(s, p); got != want {
							t.Fatalf("%s: PageLock(%d) = %p, want page %d's word at %d, %p", view.name, off, got, p, start, want)
						}
					}
				}
				for _, c := range chunks {
					first, last := pageOf(s, c.off), pageOf(s, c.off+uint32(c.size)-1)
					if got := v.PageLock(c.off); got != wordAt(s, first) {
						t.Fatalf("%s: PageLock(%d) of a chunk of %d bytes = %p, want page %d's word", view.name, c.off, c.size, got, first)
					}
					if got := v.PageLock(c.off + uint32(c.size) - 1); got != wordAt(s, last) {
						t.Fatalf("%s: PageLock(%d) at the end of a chunk of %d bytes = %p, want page %d's word", view.name, c.off+uint32(c.size)-1, c.size, got, last)
					}
				}
				for _, off := range []uint32{0, 8, uint32(descStart), s.pagesOff - 1, end, end + 1,
					end + uint32(ps/2) - 1, uint32(len(s.mem)) - 1, uint32(len(s.mem)), ^uint32(0)} {
					if got := v.PageLock(off); got != nil {
						t.Fatalf("%s: PageLock(%d) outside the pages [%d, %d) = %p, want nil", view.name, off, s.pagesOff, end, got)
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
					t.Fatalf("page %d's word = %#x, want 0 (Format) or %#x", p, atomic.LoadUint64(w), wordPattern(p))
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

// Alloc, Free, Forget, Rebuild, Restore, Attach and Check never write a
// page's word: the model writes wordPattern in every word, runs random
// operations of every kind, and checks every word after each one. The only
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
					m.s = s
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
			intact := 0
			for p := uint32(0); p < m.s.npages; p++ {
				if word(m.s, p) == wordPattern(p) {
					intact++
				}
			}
			if intact == 0 {
				t.Fatalf("no page's word holds its pattern at the end: the test checks nothing but runs")
			}
		})
	}
}

// Format zeroes every page's word, whatever the bytes held, and writes
// nothing else of the pages.
func TestFormatZeroesPageWords(t *testing.T) {
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
				for p := uint32(0); p < s.npages; p++ {
					if got := word(s, p); got != 0 {
						t.Fatalf("%s: page %d's word = %#x, want 0", when, p, got)
					}
					if got := *s.PageLock(pageStart(s, p) + pageWord); got != 0 {
						t.Fatalf("%s: *PageLock of page %d = %#x, want 0", when, p, got)
					}
				}
				for i := int(s.pagesOff); i < len(mem); i++ {
					rel := (i - int(s.pagesOff)) % ps
					if inWord := i < int(pageStart(s, s.npages)) && rel < pageWord; !inWord && mem[i] != before[i] {
						t.Fatalf("%s: byte %d (at %d in page %d) = %#x, want %#x untouched", when, i, rel, (i-int(s.pagesOff))/ps, mem[i], before[i])
					}
				}
			}
			checkFormatted("Format over random bytes", before)

			// Format again over a region in use, its words taken.
			m := newModel(t, s)
			for op := 0; op < 50; op++ {
				m.alloc(op, randSize(r, ps), byte(r.Uint32()))
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			before = slices.Clone(mem)
			if s, err = Format(mem, ps); err != nil {
				t.Fatal(err)
			}
			checkFormatted("Format over a region in use", before)
			if s.FreeBytes() != s.Capacity() || s.FreePages() != s.Pages() {
				t.Fatalf("Format over a region in use: %v, want all free", s)
			}
		})
	}
}
