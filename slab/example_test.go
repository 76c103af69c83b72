package slab_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/shmzone/shmzone/slab"
)

// Example formats a region, allocates a small chunk and a run of pages,
// frees them, and checks the region's invariants.
func Example() {
	// In a zone the region is a shard's mapped bytes; any bytes will do.
	mem := make([]byte, 64<<10)
	s, err := slab.Format(mem, 4096)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d pages of %d bytes, %d bytes free\n", s.Pages(), s.PageSize(), s.FreeBytes())

	small, err := s.Alloc(100) // a chunk of the 104-byte class
	if err != nil {
		log.Fatal(err)
	}
	large, err := s.Alloc(10000) // a run of 3 pages, less the first page's lock word
	if err != nil {
		log.Fatal(err)
	}
	for _, off := range []uint32{small, large} {
		n, err := s.Size(off)
		if err != nil {
			log.Fatal(err)
		}
		// Offsets are relative to the region, so every process that maps
		// it finds the chunk at the same one.
		fmt.Printf("chunk at offset %d: %d bytes\n", off, n)
	}
	// A row per class in use, then one for the page runs, with Size 0.
	for _, row := range s.Stats() {
		fmt.Printf("%+v\n", row)
	}

	if err := s.Free(small); err != nil {
		log.Fatal(err)
	}
	if err := s.Free(large); err != nil {
		log.Fatal(err)
	}
	// A second Free of the same chunk changes nothing and is reported.
	err = s.Free(small)
	fmt.Println("free again:", errors.Is(err, slab.ErrCorrupt))

	fmt.Println("check:", s.Check())
	fmt.Println("all free:", s.FreeBytes() == s.Capacity())
	// Output:
	// 15 pages of 4096 bytes, 61440 bytes free
	// chunk at offset 58376: 104 bytes
	// chunk at offset 46088: 12280 bytes
	// {Size:104 Pages:1 Used:1 Free:38}
	// {Size:0 Pages:3 Used:1 Free:0}
	// free again: true
	// check: <nil>
	// all free: true
}
