package slab

import (
	"testing"
	"unsafe"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The layout tests pin every overlay field and every offset constant to the
// numbers drawn in layout.go: a change to the layout must change this file
// and the drawing together.

func TestLayoutHeader(t *testing.T) {
	testutil.CheckFields(t, header{}, []testutil.Field{
		{Name: "Magic", Off: 0, Size: 4},
		{Name: "PageSize", Off: 4, Size: 4},
		{Name: "NPages", Off: 8, Size: 4},
		{Name: "PagesOff", Off: 12, Size: 4},
		{Name: "FreeRuns", Off: 16, Size: 4},
		{Name: "FreePages", Off: 20, Size: 4},
		{Name: "FreeBytes", Off: 24, Size: 8},
		{Name: "Allocs", Off: 32, Size: 8},
		{Name: "Frees", Off: 40, Size: 8},
		{Name: "Fails", Off: 48, Size: 8},
	})
	testutil.CheckDrawing(t, "layout.go", "magic", header{})
	if hdrSize != 56 {
		t.Errorf("hdrSize = %d, want 56", hdrSize)
	}
}

func TestLayoutDesc(t *testing.T) {
	testutil.CheckFields(t, desc{}, []testutil.Field{
		{Name: "Next", Off: 0, Size: 4},
		{Name: "Prev", Off: 4, Size: 4},
		{Name: "Run", Off: 8, Size: 4},
		{Name: "Kind", Off: 12, Size: 1},
		{Name: "Class", Off: 13, Size: 1},
		{Name: "Used", Off: 14, Size: 2},
		{Name: "Bitmap", Off: 16, Size: 32},
	})
	testutil.CheckDrawing(t, "layout.go", "next", desc{})
	if descSize != 48 {
		t.Errorf("descSize = %d, want 48", descSize)
	}
	if bits := int(unsafe.Sizeof(desc{}.Bitmap)) * 8; maxChunks != bits {
		t.Errorf("maxChunks = %d, want the %d bits of desc.Bitmap", maxChunks, bits)
	}
	// Class holds a class index, Used a chunk count.
	if numClasses > 1<<8 || maxChunks >= 1<<16 {
		t.Errorf("numClasses %d or maxChunks %d overflow desc.Class or desc.Used", numClasses, maxChunks)
	}
}

// TestLayoutRegion pins the offsets of the region drawing: the class heads
// after the header, the descriptors 8-aligned after them, and page 0
// pageAlign-aligned after the descriptors, for regions of several sizes.
func TestLayoutRegion(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want int
	}{
		{"classHeadsOff", classHeadsOff, 56},
		{"classHeadSize", classHeadSize, int(unsafe.Sizeof(uint32(0)))},
		{"numClasses", numClasses, 48},
		{"descStart", descStart, 248},
		{"pageAlign", pageAlign, 64},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if end := classHeadsOff + numClasses*classHeadSize; descStart < end || descStart-end > 7 || descStart%8 != 0 {
		t.Errorf("descStart = %d, class heads end at %d: want the next multiple of 8", descStart, end)
	}
	for _, tt := range []struct {
		size, pageSize   int
		npages, pagesOff int
	}{
		{size: 64 << 10, pageSize: 4096, npages: 15, pagesOff: 1024},
		{size: 1 << 20, pageSize: 4096, npages: 252, pagesOff: 12352},
		{size: 1 << 20, pageSize: 1024, npages: 977, pagesOff: 47168},
	} {
		npages, pagesOff := layoutFor(tt.size, tt.pageSize)
		if npages != tt.npages || pagesOff != tt.pagesOff {
			t.Errorf("layoutFor(%d, %d) = %d, %d, want %d, %d", tt.size, tt.pageSize, npages, pagesOff, tt.npages, tt.pagesOff)
		}
		descEnd := descStart + npages*descSize
		if pagesOff%pageAlign != 0 || pagesOff < descEnd || pagesOff-descEnd >= pageAlign {
			t.Errorf("layoutFor(%d, %d): page 0 at %d, descriptors end at %d: want the next multiple of %d", tt.size, tt.pageSize, pagesOff, descEnd, pageAlign)
		}
		if pagesOff+npages*tt.pageSize > tt.size {
			t.Errorf("layoutFor(%d, %d): %d pages at %d overrun the region", tt.size, tt.pageSize, npages, pagesOff)
		}
	}
}
