package slab

import "fmt"

// ClassStats describes the use of one size class.
type ClassStats struct {
	Size       int // chunk size in bytes
	Pages      int // pages of this class
	Used, Free int // chunks
}

// Stats returns the use of each size class with at least one page, and of
// page runs as a last row with Size 0 (Used counts runs, Pages their pages).
func (s *Slab) Stats() []ClassStats {
	var cls [numClasses]ClassStats
	var runs ClassStats
	for p := uint32(0); p < s.npages; p++ {
		d := s.desc(p)
		switch {
		case d.Kind == kindSmall && int(d.Class) < numClasses:
			n := chunksPerPage(int(d.Class), s.pageSize)
			cs := &cls[d.Class]
			cs.Pages++
			cs.Used += int(d.Used)
			cs.Free += n - int(d.Used)
		case d.Kind == kindRun:
			runs.Used++
			runs.Pages += int(d.Run)
		}
	}
	var out []ClassStats
	for c := range cls {
		if cls[c].Pages > 0 {
			cls[c].Size = int(classSizes[c])
			out = append(out, cls[c])
		}
	}
	if runs.Used > 0 {
		out = append(out, runs)
	}
	return out
}

func (s *Slab) String() string {
	return fmt.Sprintf("slab{%d pages of %d, %d free, %d free bytes}", s.npages, s.pageSize, s.FreePages(), s.FreeBytes())
}
