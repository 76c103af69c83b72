package slab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzSlabOps runs an op sequence read from the input against the model:
// the first byte picks the page size, then each op byte is an Alloc of a
// small or a large size, a Free of a live chunk by index, a Forget of one
// followed by Rebuild (253), a Restore after the header is overwritten
// (254), or a Rebuild (255).
func FuzzSlabOps(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{3, 0, 6, 1, 6, 3, 0, 3, 0})
	f.Add([]byte{3, 2, 0x10, 0x00, 2, 0xff, 0x0f, 0, 200, 3, 1, 255, 3, 0})
	f.Add([]byte{1, 0, 1, 0, 1, 0, 1, 0, 1, 3, 2, 3, 1, 3, 0, 255})
	f.Add([]byte{2, 2, 0, 0x40, 2, 0, 0x40, 2, 0, 0x40, 3, 1, 2, 0, 0x40, 3, 0, 3, 0})
	big := []byte{3}
	for i := 0; i < 200; i++ {
		big = append(big, byte(i%4), byte(i*7), byte(i*13))
	}
	f.Add(big)
	f.Add([]byte{0, 2, 0xf8, 0x01, 0, 30, 253, 0, 254, 2, 0xf8, 0x01, 254, 3, 0, 255})
	f.Add([]byte{3, 2, 0xf7, 0x1f, 1, 0, 2, 0xf8, 0x1f, 254, 253, 1, 3, 0, 254})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1024 {
			return // long inputs only make each run slower
		}
		pageSize := 512 << (data[0] % 4)
		s := newSlab(t, 48<<10, pageSize)
		m := newModel(t, s)
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		data = data[1:]
		for op := 0; len(data) > 0; op++ {
			switch b := next(); {
			case b == 255:
				s.Rebuild()
			case b == 254:
				m.restore(op)
				s = m.s
			case b == 253:
				if len(m.live) > 0 {
					m.forget(op, int(next())%len(m.live))
				}
			case b%4 < 2:
				m.alloc(op, 1+int(next())*8, b)
			case b%4 == 2:
				size := int(next()) | int(next())<<8
				m.alloc(op, 1+size%(4*pageSize), b)
			case len(m.live) > 0:
				m.free(op, int(next())%len(m.live))
			}
			if err := s.Check(); err != nil {
				t.Fatalf("op %d: Check() = %v", op, err)
			}
			m.verify(op, op%64 == 0)
		}
		m.verify(-1, true)
		for len(m.live) > 0 {
			m.free(-1, 0)
		}
		m.verify(-1, true)
		if s.FreeBytes() != s.Capacity() {
			t.Fatalf("after freeing all: %v", s)
		}
	})
}

// corruptible returns a region of 512-byte pages with chunks of several
// classes and runs, some freed, as the bytes of its mapping. It is the same
// region on every call, from a fixed seed and not from testutil.Seed: a
// fuzz input is bytes written over this region, so an input the fuzzer
// saved in testdata/fuzz means something only over the region it was found
// on, and the fuzzer needs one input to give one run.
func corruptible(t testing.TB) ([]byte, *Slab) {
	mem := alignedMem(32 << 10)
	s, err := Format(mem, 512)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var offs []uint32
	for i := 0; i < 120; i++ {
		size := 1 + r.IntN(256)
		if i%10 == 0 {
			size = 513 + r.IntN(1500)
		}
		if off, err := s.Alloc(size); err == nil {
			offs = append(offs, off)
		}
	}
	for i, off := range offs {
		if i%3 == 1 {
			s.Free(off)
		}
	}
	// Bytes in the pages that the package must not write, but for the
	// word of a page Alloc takes: a pattern in every page's word, and
	// others in the chunks and free pages.
	for i := s.pagesOff; i < uint32(len(mem)); i++ {
		mem[i] = byte(i*131 + 7)
	}
	for p := uint32(0); p < s.npages; p++ {
		binary.NativeEndian.PutUint64(mem[pageStart(s, p):], wordPattern(p))
	}
	return mem, s
}

// FuzzAttachCorrupt writes the input's bytes over a busy region's metadata,
// as a crash or a hostile process could, then uses the region: nothing may
// panic, loop forever, hand out an offset outside the pages or at a page's
// word, or write a byte of the pages, but for an Alloc that succeeds, which
// may zero the word of the page that holds its chunk (the page it takes),
// and for Free and Rebuild, which may write FreeWord in the word of a page
// the metadata then says is free; and Rebuild must leave a region that
// passes Check and works.
func FuzzAttachCorrupt(f *testing.F) {
	_, s := corruptible(f)
	put := func(off int, v ...byte) []byte {
		b := binary.LittleEndian.AppendUint16(nil, uint16(off))
		for i, x := range v {
			if i > 0 {
				b = binary.LittleEndian.AppendUint16(b, uint16(off+i))
			}
			b = append(b, x)
		}
		return b
	}
	f.Add([]byte{})
	f.Add(put(classHeadsOff, 0, 0, 0, 0))                     // class 16 head cut
	f.Add(put(classHeadsOff+4*classOf(56), 0xff, 0xff, 0, 0)) // class 56 head out of range
	f.Add(put(16, 0, 0, 0, 0))                                // free-run list cut
	f.Add(put(16, 3, 0, 0, 0))                                // free-run list at page 2
	f.Add(put(20, 0xff))                                      // free pages
	f.Add(put(24, 0xff, 0xff))                                // free bytes
	f.Add(put(0, 'X'))                                        // magic
	f.Add(put(8, 1))                                          // page count
	f.Add(put(descStart+12, kindNone))                        // page 0 of no kind
	f.Add(put(descStart+descSize*5+12, kindRun, 0, 0, 0xff))  // page 5 a run
	f.Add(put(descStart+descSize*3+8, 0xff, 0xff, 0xff, 0xff))
	f.Add(put(descStart+descSize*int(s.npages-1)+13, byte(numClasses-1))) // last page of the largest class
	small := 0
	for small+1 < int(s.npages) && s.desc(uint32(small)).Kind != kindSmall {
		small++
	}
	f.Add(put(descStart+descSize*small+13, byte(numClasses-1))) // a small page of a class no page of 512 holds
	f.Add(put(descStart+descSize*small+13, byte(numClasses)))   // a small page of no class
	f.Add(put(descStart+descSize*small+13, byte(classOf(248)))) // a small page of 2 chunks a page
	f.Add(put(descStart+descSize*int(s.npages-1)+16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	f.Add(put(descStart+descSize*int(s.npages-2), 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem, orig := corruptible(t)
		meta := int(orig.pagesOff)
		pages := slices.Clone(mem[meta:])
		for ; len(data) >= 3; data = data[3:] {
			mem[int(binary.LittleEndian.Uint16(data))%meta] = data[2]
		}
		s, err := Attach(mem)
		if err != nil {
			if !errors.Is(err, ErrBadRegion) {
				t.Fatalf("Attach = %v, want ErrBadRegion", err)
			}
			return
		}
		// untouched checks, after each operation, that it wrote no byte of
		// the pages, but for the word of page took (-1 for none), which it
		// may only zero, and the word of a page now free, which it may
		// only set to FreeWord.
		untouched := func(what string, took int) {
			got := mem[meta:]
			if slices.Equal(got, pages) {
				return
			}
			ps := int(s.pageSize)
			for i := range pages {
				if got[i] == pages[i] {
					continue
				}
				if p := i / ps; p == took && i%ps < pageWord && word(s, uint32(p)) == 0 {
					continue
				}
				if p := uint32(i / ps); i%ps < pageWord && word(s, p) == FreeWord && isFree(s.desc(p).Kind) {
					continue
				}
				t.Fatalf("%s: byte %d of the pages (at %d in page %d) = %#x, want %#x: written over corrupt metadata",
					what, i, i%ps, i/ps, got[i], pages[i])
			}
			copy(pages, got)
		}
		lo, hi := int64(s.pagesOff), int64(s.pagesOff)+s.Capacity()
		inPages := func(what string, off uint32, size int) {
			if int64(off) < lo || int64(off)+int64(size) > hi || size <= 0 {
				t.Fatalf("%s: chunk %d of %d bytes outside the pages [%d, %d)", what, off, size, lo, hi)
			}
			if rel := (off - s.pagesOff) % s.pageSize; rel < pageWord {
				t.Fatalf("%s: chunk %d of %d bytes at %d in its page, in its word", what, off, size, rel)
			}
		}
		isCorrupt := func(what string, err error) {
			if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%s = %v, want nil, ErrCorrupt, ErrNoMemory or ErrTooLarge", what, err)
			}
		}
		isCorrupt("Check", s.Check())
		untouched("Check", -1)
		var offs []uint32
		s.ForEach(func(off uint32, size int) bool {
			inPages("ForEach", off, size)
			offs = append(offs, off)
			return true
		})
		untouched("ForEach", -1)
		if len(offs) > s.Pages()*maxChunks {
			t.Fatalf("ForEach saw %d chunks in %d pages", len(offs), s.Pages())
		}
		for _, off := range offs {
			if n, err := s.Size(off); err == nil {
				inPages("Size", off, n)
			}
		}
		untouched("Size", -1)
		for _, size := range []int{1, 56, 200, 248, 249, 256, 257, 504, 505, 600, 2000} {
			off, err := s.Alloc(size)
			isCorrupt("Alloc", err)
			took := -1
			if err == nil {
				inPages("Alloc", off, s.ChunkSize(size))
				took = int(pageOf(s, off))
			}
			untouched(fmt.Sprintf("Alloc(%d) = %d, %v", size, off, err), took)
		}
		for i, off := range offs {
			if i%2 == 0 {
				err := s.Free(off)
				isCorrupt("Free", err)
				untouched(fmt.Sprintf("Free(%d) = %v", off, err), -1)
			}
		}
		if len(offs) > 1 {
			s.Forget(offs[1])
			untouched("Forget", -1)
		}
		s.Stats()
		_ = s.String()
		untouched("Stats", -1)

		s.Rebuild()
		untouched("Rebuild", -1)
		if err := s.Check(); err != nil {
			t.Fatalf("Check() after Rebuild = %v", err)
		}
		// The rebuilt region works.
		var kept []uint32
		s.ForEach(func(off uint32, size int) bool {
			inPages("ForEach after Rebuild", off, size)
			if _, err := s.Size(off); err != nil {
				t.Fatalf("Size(%d) of a chunk ForEach gave = %v", off, err)
			}
			kept = append(kept, off)
			return true
		})
		for _, off := range kept {
			if err := s.Free(off); err != nil {
				t.Fatalf("Free(%d) after Rebuild = %v", off, err)
			}
		}
		m := newModel(t, s)
		if s.FreeBytes() != s.Capacity() || s.FreePages() != s.Pages() {
			t.Fatalf("after Rebuild and freeing all: %v, want %d free bytes", s, s.Capacity())
		}
		for i, size := range []int{16, 100, 700, 2000, 56, 56, 300} {
			m.alloc(i, size, byte(i))
			m.verify(i, true)
		}
	})
}

// isFree reports whether a page of kind k is part of a free run.
func isFree(k uint8) bool { return k == kindFree || k == kindFreeBody || k == kindFreeTail }
