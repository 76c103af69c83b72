package slab

// Size classes: multiples of 8 up to 128 bytes, so that a small entry wastes
// at most 7 bytes, then steps of an eighth of each power of two up to
// maxSmall. Larger sizes take runs of whole pages.
var classSizes = [...]uint16{
	16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128,
	144, 160, 176, 192, 208, 224, 240, 248, 272,
	288, 320, 352, 384, 416, 448, 480, 504,
	576, 640, 704, 768, 832, 896, 960, 1016,
	1152, 1280, 1408, 1536, 1664, 1792, 1920, 2040,
}

// The classes that would divide a page exactly (256, 512, 1024, 2048) are 8
// bytes less, so that a page holds as many of them after its PageHdr as it
// would without one; 272 keeps the step from 248 to 288 within an eighth.

const (
	numClasses = len(classSizes)
	maxSmall   = 2040
)

// classIndex maps (size+7)/8 to the smallest class that holds size.
var classIndex = func() (t [maxSmall/8 + 1]uint8) {
	c := 0
	for i := range t {
		for int(classSizes[c]) < i*8 {
			c++
		}
		t[i] = uint8(c)
	}
	return t
}()

// classOf returns the class for size bytes, size in 1..maxSmall.
func classOf(size int) int { return int(classIndex[(size+7)>>3]) }

// ChunkSize returns the bytes Alloc(size) takes: the size of its class, or
// whole pages of pageSize for a size above the largest class. A size of 0 or
// less takes what a size of 1 takes, as in Alloc.
func ChunkSize(size, pageSize int) int {
	if size <= 0 {
		size = 1 // as Alloc does
	}
	if isSmall(size, pageSize) {
		return int(classSizes[classOf(size)])
	}
	return (size+PageHdr+pageSize-1)/pageSize*pageSize - PageHdr
}

// isSmall reports whether size bytes take a chunk of a class, at least two of
// which fit a page; larger sizes take a run of whole pages.
func isSmall(size, pageSize int) bool {
	return size <= maxSmall && 2*int(classSizes[classOf(size)]) <= pageSize-PageHdr
}

// chunksPerPage returns how many chunks of class c a page holds after its
// PageHdr.
func chunksPerPage(c int, pageSize uint32) int {
	n := (int(pageSize) - PageHdr) / int(classSizes[c])
	if n > maxChunks {
		n = maxChunks
	}
	return n
}
