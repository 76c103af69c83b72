package slab

import (
	"errors"
	"math/rand/v2"
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
