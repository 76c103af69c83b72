package slab

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// chunks returns what ForEach sees: offset to size.
func chunks(s *Slab) map[uint32]int {
	got := map[uint32]int{}
	s.ForEach(func(off uint32, size int) bool {
		got[off] = size
		return true
	})
	return got
}

// busyRegion returns a region with chunks of many classes and runs, some
// pages full, some partly used, runs and free runs of several pages, at
// least two free runs, and its chunks. The chunks are random, from the
// test's seed; a draw that lacks one of those shapes, which the tests look
// for, is thrown away for the seed's next stream.
func busyRegion(t *testing.T) (*Slab, map[uint32]int) {
	t.Helper()
	seed := testutil.Seed(t)
	const tries = 100
	for stream := uint64(0); stream < tries; stream++ {
		s := newSlab(t, 512<<10, 4096)
		fillBusy(t, s, rand.New(rand.NewPCG(seed, stream)))
		if err := s.Check(); err != nil {
			t.Fatalf("busy region (stream %d): Check() = %v", stream, err)
		}
		if why := notBusy(s); why != "" {
			t.Logf("stream %d: %s; drawing again", stream, why)
			continue
		}
		return s, chunks(s)
	}
	t.Fatalf("no busy region in %d streams", tries)
	return nil, nil
}

// fillBusy allocates 600 chunks of random sizes in s and frees a third.
func fillBusy(t *testing.T, s *Slab, r *rand.Rand) {
	t.Helper()
	var offs []uint32
	for i := 0; i < 600; i++ {
		size := randSize(r, 4096)
		off, err := s.Alloc(size)
		if errors.Is(err, ErrNoMemory) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	for i, off := range offs {
		if i%3 == 0 {
			if err := s.Free(off); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// notBusy says what s lacks of what busyRegion promises, "" when nothing.
func notBusy(s *Slab) string {
	var full, partial, runs, longRuns, longFree int
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		switch {
		case d.Kind == kindSmall && int(d.Used) == pageChunks(s, d):
			full++
		case d.Kind == kindSmall:
			partial++
		case d.Kind == kindRun:
			runs++
			if d.Run >= 2 {
				longRuns++
			}
		case d.Kind == kindFree && d.Run >= 2:
			longFree++
		}
	}
	if full == 0 || partial < 2 || runs < 2 || longRuns == 0 || longFree == 0 ||
		s.FreePages() == 0 || s.hdr().FreeRuns == 0 || s.desc(s.hdr().FreeRuns-1).Next == 0 {
		return fmt.Sprintf("%d full, %d partial pages, %d runs (%d of 2+ pages), %d free runs of 2+ pages, %v",
			full, partial, runs, longRuns, longFree, s)
	}
	return ""
}

// pageChunks returns how many chunks small page d of s holds, by the model.
func pageChunks(s *Slab, d *desc) int { return perPage(int(classSizes[d.Class]), int(s.pageSize)) }

// find returns the first page for which ok is true.
func find(t *testing.T, s *Slab, ok func(p uint32, d *desc) bool) uint32 {
	t.Helper()
	for p := uint32(0); p < s.npages; p++ {
		if ok(p, s.desc(p)) {
			return p
		}
	}
	t.Fatalf("no page fits")
	return 0
}

func isPartial(s *Slab) func(p uint32, d *desc) bool {
	return func(p uint32, d *desc) bool {
		return d.Kind == kindSmall && int(d.Used) < pageChunks(s, d) && d.Used > 1
	}
}

func isFull(s *Slab) func(p uint32, d *desc) bool {
	return func(p uint32, d *desc) bool {
		return d.Kind == kindSmall && int(d.Used) == pageChunks(s, d)
	}
}

func isKind(k uint8) func(p uint32, d *desc) bool {
	return func(p uint32, d *desc) bool { return d.Kind == k }
}

// Crashes in the middle of Alloc or Free leave lists and counters wrong;
// Rebuild recomputes them from the descriptors, and every chunk whose bit (or
// run head) survived is still allocated.
func TestRebuild(t *testing.T) {
	tests := []struct {
		name string
		// corrupt damages s and returns the chunks the damage frees
		// (lost) or allocates (gained)
		corrupt func(t *testing.T, s *Slab) (lost, gained []uint32)
	}{
		{"class heads zeroed", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			for c := 0; c < numClasses; c++ {
				*s.classHead(c) = 0
			}
			return nil, nil
		}},
		{"class head at a full page", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isFull(s))
			*s.classHead(int(s.desc(p).Class)) = p + 1
			return nil, nil
		}},
		{"class head out of range", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isPartial(s))
			*s.classHead(int(s.desc(p).Class)) = s.npages + 7
			return nil, nil
		}},
		{"class list cycle", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isPartial(s))
			s.desc(p).Next = p + 1
			return nil, nil
		}},
		{"class list prev wrong", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isPartial(s))
			s.desc(p).Prev = p + 1 // itself
			return nil, nil
		}},
		{"used too high", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.desc(find(t, s, isPartial(s))).Used++
			return nil, nil
		}},
		{"used zero", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.desc(find(t, s, isPartial(s))).Used = 0
			return nil, nil
		}},
		{"bit set, used not counted (Alloc cut short)", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isPartial(s))
			d := s.desc(p)
			for i := 0; i < pageChunks(s, d); i++ {
				if d.Bitmap[i>>6]&(1<<(i&63)) == 0 {
					d.Bitmap[i>>6] |= 1 << (i & 63)
					return nil, []uint32{chunkAt(s, p, i, int(classSizes[d.Class]))}
				}
			}
			t.Fatalf("partial page %d has no free chunk", p)
			return nil, nil
		}},
		{"bit cleared, used not counted (Free cut short)", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isPartial(s))
			d := s.desc(p)
			i := 0
			for d.Bitmap[i>>6]&(1<<(i&63)) == 0 {
				i++
			}
			d.Bitmap[i>>6] &^= 1 << (i & 63)
			return []uint32{chunkAt(s, p, i, int(classSizes[d.Class]))}, nil
		}},
		{"bits past the last chunk", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, func(p uint32, d *desc) bool {
				return d.Kind == kindSmall && pageChunks(s, d) < 192
			})
			s.desc(p).Bitmap[3] |= 1 << 63
			return nil, nil
		}},
		{"free-run list cut", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.hdr().FreeRuns = 0
			return nil, nil
		}},
		{"free-run list at an allocated page", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.hdr().FreeRuns = find(t, s, isKind(kindRun)) + 1
			return nil, nil
		}},
		{"free-run list cycle", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := s.hdr().FreeRuns - 1
			s.desc(p).Next = p + 1
			return nil, nil
		}},
		{"free run unlinked (takePages cut short)", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.dropFreeRun(s.desc(s.hdr().FreeRuns-1).Next - 1)
			return nil, nil
		}},
		{"free runs not merged (freePages cut short)", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, func(p uint32, d *desc) bool { return d.Kind == kindFree && d.Run >= 2 })
			n := s.desc(p).Run
			s.dropFreeRun(p)
			s.putFreeRun(p, 1)
			s.putFreeRun(p+1, n-1)
			return nil, nil
		}},
		{"free counters wrong", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.hdr().FreePages += 3
			s.hdr().FreeBytes -= 100
			return nil, nil
		}},
		{"free page of kind none", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isKind(kindFree))
			s.desc(p).Kind = kindNone
			return nil, nil
		}},
		{"run of kind none", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isKind(kindRun))
			s.desc(p).Kind = kindNone
			return []uint32{runAt(s, p)}, nil
		}},
		{"small page of kind none", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isFull(s))
			var lost []uint32
			for off := range chunks(s) {
				if pageOf(s, off) == p {
					lost = append(lost, off)
				}
			}
			s.desc(p).Kind = kindNone
			return lost, nil
		}},
		{"kind out of range", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			s.desc(find(t, s, isKind(kindFree))).Kind = 200
			return nil, nil
		}},
		{"class out of range", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isFull(s))
			var lost []uint32
			for off := range chunks(s) {
				if pageOf(s, off) == p {
					lost = append(lost, off)
				}
			}
			s.desc(p).Class = uint8(numClasses)
			return lost, nil
		}},
		{"run body broken", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, func(p uint32, d *desc) bool { return d.Kind == kindRun && d.Run >= 2 })
			s.desc(p + 1).Run = p + 1
			return []uint32{runAt(s, p)}, nil
		}},
		{"run too long", func(t *testing.T, s *Slab) ([]uint32, []uint32) {
			p := find(t, s, isKind(kindRun))
			s.desc(p).Run = s.npages
			return []uint32{runAt(s, p)}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, live := busyRegion(t)
			freeBytes, freePages := s.FreeBytes(), s.FreePages()
			lost, gained := tt.corrupt(t, s)
			if err := s.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check() after corruption = %v, want ErrCorrupt", err)
			}
			s.Rebuild()
			if err := s.Check(); err != nil {
				t.Fatalf("Check() after Rebuild = %v", err)
			}
			want := maps.Clone(live)
			for _, off := range lost {
				if _, ok := want[off]; !ok {
					t.Fatalf("test bug: lost chunk %d was not live", off)
				}
				delete(want, off)
			}
			for _, off := range gained {
				want[off] = int(classSizes[s.desc(pageOf(s, off)).Class])
			}
			got := chunks(s)
			if !maps.Equal(got, want) {
				t.Fatalf("after Rebuild ForEach sees %d chunks, want %d (%d lost, %d gained)", len(got), len(want), len(lost), len(gained))
			}
			if len(lost) == 0 && len(gained) == 0 {
				if s.FreeBytes() != freeBytes || s.FreePages() != freePages {
					t.Fatalf("after Rebuild: FreeBytes %d, FreePages %d, want %d, %d", s.FreeBytes(), s.FreePages(), freeBytes, freePages)
				}
			}
			// The rebuilt region works: fill it, then free everything.
			for off := range got {
				if err := s.Free(off); err != nil {
					t.Fatalf("Free(%d) after Rebuild = %v", off, err)
				}
			}
			if s.FreeBytes() != s.Capacity() || s.FreePages() != s.Pages() {
				t.Fatalf("after freeing all: %v, want %d free bytes", s, s.Capacity())
			}
			for n := 0; ; n++ {
				if _, err := s.Alloc(100); errors.Is(err, ErrNoMemory) {
					break
				} else if err != nil {
					t.Fatalf("Alloc #%d after Rebuild = %v", n, err)
				}
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check() after refilling = %v", err)
			}
		})
	}
}

func TestRebuildHealthy(t *testing.T) {
	s, live := busyRegion(t)
	freeBytes, freePages := s.FreeBytes(), s.FreePages()
	s.Rebuild()
	if err := s.Check(); err != nil {
		t.Fatalf("Check() after Rebuild of a healthy region = %v", err)
	}
	if got := chunks(s); !maps.Equal(got, live) {
		t.Fatalf("Rebuild of a healthy region changed the chunks: %d, want %d", len(got), len(live))
	}
	if s.FreeBytes() != freeBytes || s.FreePages() != freePages {
		t.Fatalf("Rebuild of a healthy region: FreeBytes %d, FreePages %d, want %d, %d", s.FreeBytes(), s.FreePages(), freeBytes, freePages)
	}
}

// Forget then Rebuild frees exactly the forgotten chunk: the repair of an
// entry that was being written.
func TestForget(t *testing.T) {
	tests := []struct {
		name string
		pick func(t *testing.T, s *Slab, live map[uint32]int) uint32
	}{
		{"small chunk", func(t *testing.T, s *Slab, live map[uint32]int) uint32 {
			p := find(t, s, isPartial(s))
			for _, off := range slices.Sorted(maps.Keys(live)) {
				if pageOf(s, off) == p {
					return off
				}
			}
			return 0
		}},
		{"last chunk of a page", func(t *testing.T, s *Slab, live map[uint32]int) uint32 {
			p := find(t, s, isPartial(s))
			var last uint32
			for _, off := range slices.Sorted(maps.Keys(live)) {
				if pageOf(s, off) != p {
					continue
				}
				if last != 0 {
					if err := s.Free(last); err != nil {
						t.Fatal(err)
					}
					delete(live, last)
				}
				last = off
			}
			if d := s.desc(p); d.Used != 1 {
				t.Fatalf("page %d has %d chunks, want 1", p, d.Used)
			}
			return last
		}},
		{"run", func(t *testing.T, s *Slab, live map[uint32]int) uint32 {
			return runAt(s, find(t, s, func(p uint32, d *desc) bool { return d.Kind == kindRun && d.Run >= 2 }))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, live := busyRegion(t)
			off := tt.pick(t, s, live)
			size, ok := live[off]
			if !ok {
				t.Fatalf("test bug: %d is not a live chunk", off)
			}
			// What Forget gives back: the chunk, or for the last chunk of
			// a small page the whole page, or a run's pages, words
			// included.
			d := s.desc(pageOf(s, off))
			wantFree := s.FreeBytes() + int64(size)
			switch {
			case d.Kind == kindRun:
				wantFree = s.FreeBytes() + int64(size) + pageWord
			case d.Used == 1:
				n := pageChunks(s, d)
				wantFree = s.FreeBytes() + int64(s.pageSize) - int64((n-1)*size)
			}
			s.Forget(off)
			s.Rebuild()
			if err := s.Check(); err != nil {
				t.Fatalf("Check() after Forget(%d), Rebuild = %v", off, err)
			}
			want := maps.Clone(live)
			delete(want, off)
			if got := chunks(s); !maps.Equal(got, want) {
				t.Fatalf("after Forget(%d), Rebuild: %d chunks, want %d", off, len(got), len(want))
			}
			if _, err := s.Size(off); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Size(%d) after Forget, Rebuild = %v, want ErrCorrupt", off, err)
			}
			if got := s.FreeBytes(); got != wantFree {
				t.Fatalf("FreeBytes() after Forget(%d of %d bytes), Rebuild = %d, want %d", off, size, got, wantFree)
			}
		})
	}
}
