package slab

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// The geometry the tests expect, computed here from its rules rather than
// taken from the package: every page starts with a word of pageWord bytes
// (its lock word, PageHdr) that no chunk covers; chunk i of a small page of
// class size c starts at the page's start + pageWord + i*c, and the page
// holds (pageSize-pageWord)/c of them, at most maxChunks; a size takes the
// smallest class that holds it if a page holds two of that class, else a
// run of whole pages whose chunk starts after its first page's word.
const pageWord = 8

// pageStart returns the offset of page p of s.
func pageStart(s *Slab, p uint32) uint32 { return s.pagesOff + p*s.pageSize }

// pageOf returns the page that holds offset off of the page area of s.
func pageOf(s *Slab, off uint32) uint32 { return (off - s.pagesOff) / s.pageSize }

// chunkAt returns the offset of chunk i of csize bytes in small page p.
func chunkAt(s *Slab, p uint32, i, csize int) uint32 {
	return pageStart(s, p) + pageWord + uint32(i*csize)
}

// runAt returns the offset of the chunk of the run that starts at page p.
func runAt(s *Slab, p uint32) uint32 { return pageStart(s, p) + pageWord }

// perPage returns how many chunks of csize bytes a small page of ps bytes
// holds.
func perPage(csize, ps int) int { return min((ps-pageWord)/csize, maxChunks) }

// refChunk returns the bytes Alloc(size) takes with pages of ps bytes, and
// whether they are a chunk of a small page rather than a run.
func refChunk(size, ps int) (csize int, small bool) {
	size = max(size, 1)
	for _, c := range classSizes {
		if int(c) >= size {
			if 2*int(c) <= ps-pageWord {
				return int(c), true
			}
			break
		}
	}
	return (size+pageWord+ps-1)/ps*ps - pageWord, false
}

// runPages returns the pages of a run whose chunk has csize bytes.
func runPages(csize, ps int) int { return (csize + pageWord) / ps }

// wordPattern is what the tests write in page p's word, distinct for every
// page and unlike anything the package writes.
func wordPattern(p uint32) uint64 { return 0xa55a_c3c3_0000_5aa5 ^ uint64(p)<<16 }

// word returns the value of page p's word, read from its bytes.
func word(s *Slab, p uint32) uint64 {
	return binary.NativeEndian.Uint64(s.mem[pageStart(s, p):])
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
				if want, _ := refChunk(size, ps); got != want {
					t.Fatalf("Size(Alloc(%d)) = %d, want %d", size, got, want)
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
	// Above 128 the classes that divided a page exactly are 8 bytes less,
	// so that a page holds as many chunks of every class after its word as
	// it would without one.
	for _, c := range classSizes {
		if n, old := perPage(int(c), 4096), 4096/int(c); c > 128 && n != old {
			t.Errorf("a page of 4096 holds %d chunks of %d after its word, %d without", n, c, old)
		}
	}
	// ChunkSize follows the rules at every size and page size.
	for _, ps := range []int{512, 1024, 2048, 4096, 8192, 1 << 16} {
		for size := -1; size <= 3*ps+pageWord+1; size++ {
			if want, _ := refChunk(size, ps); ChunkSize(size, ps) != want {
				t.Fatalf("ChunkSize(%d, %d) = %d, want %d", size, ps, ChunkSize(size, ps), want)
			}
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
