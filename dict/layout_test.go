package dict

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

// The layout tests pin every overlay field and every offset constant to the
// numbers drawn in layout.go: a change to the layout must change this file
// and the drawing together.

func TestLayoutShardHdr(t *testing.T) {
	testutil.CheckFields(t, shardHdr{}, []testutil.Field{
		{Name: "Lock", Off: 0, Size: 8},
		{Name: "Seq", Off: 8, Size: 8},
		{Name: "Drop", Off: 16, Size: 4},
		{Name: "QueueHead", Off: 20, Size: 4},
		{Name: "QueueTail", Off: 24, Size: 4},
		{Name: "Count", Off: 28, Size: 4},
		{Name: "Evictions", Off: 32, Size: 8},
		{Name: "Expirations", Off: 40, Size: 8},
		{Name: "LockWaits", Off: 48, Size: 8},
		{Name: "Recoveries", Off: 56, Size: 8},
		{Name: "Hits", Off: 64, Size: 8},
		{Name: "Misses", Off: 72, Size: 8},
		{Name: "Writes", Off: 80, Size: 8},
		{Name: "Incrs", Off: 88, Size: 8},
		{Name: "Lost", Off: 96, Size: 8},
		{Name: "ProtTail", Off: 104, Size: 4},
		{Name: "ProtCount", Off: 108, Size: 4},
		{Name: "TraceGen", Off: 112, Size: 4},
		{Name: "MovedAt", Off: 116, Size: 4},
		{Name: "Moves", Off: 120, Size: 8},
		{Name: "TraceExp", Off: 128, Size: 128},
		{Name: "TraceFill", Off: 256, Size: 4},
		{Name: "TraceSwept", Off: 260, Size: 4},
		{Name: "_", Off: 264, Size: 56},
	})
	testutil.CheckDrawing(t, "layout.go", "lock", shardHdr{})
	if shardHdrSize != 320 {
		t.Errorf("shardHdrSize = %d, want 320", shardHdrSize)
	}
	var h shardHdr
	// Lock is CAS'd, Seq and the counts are read or added to atomically:
	// each must be 8-aligned, which the shard (page-aligned) makes them
	// when their offsets are.
	for _, f := range []struct {
		name string
		off  uintptr
	}{
		{"Lock", unsafe.Offsetof(h.Lock)},
		{"Seq", unsafe.Offsetof(h.Seq)},
		{"Evictions", unsafe.Offsetof(h.Evictions)},
		{"Expirations", unsafe.Offsetof(h.Expirations)},
		{"LockWaits", unsafe.Offsetof(h.LockWaits)},
		{"Recoveries", unsafe.Offsetof(h.Recoveries)},
		{"Hits", unsafe.Offsetof(h.Hits)},
		{"Misses", unsafe.Offsetof(h.Misses)},
		{"Writes", unsafe.Offsetof(h.Writes)},
		{"Incrs", unsafe.Offsetof(h.Incrs)},
		{"Lost", unsafe.Offsetof(h.Lost)},
		{"TraceExp", unsafe.Offsetof(h.TraceExp)},
	} {
		if f.off%8 != 0 {
			t.Errorf("shardHdr.%s at %d: not 8-aligned", f.name, f.off)
		}
	}
	// The counts added without the lock have the second cache line to
	// themselves, away from the lock and what it guards.
	if off := unsafe.Offsetof(h.Hits); off != 64 || unsafe.Offsetof(h.Recoveries)+8 > 64 {
		t.Errorf("shardHdr.Hits at %d, Recoveries ends at %d: want the second cache line to start at Hits, 64", off, unsafe.Offsetof(h.Recoveries)+8)
	}
}

func TestLayoutEntry(t *testing.T) {
	testutil.CheckFields(t, entry{}, []testutil.Field{
		{Name: "Next", Off: 0, Size: 4},
		{Name: "QPrev", Off: 4, Size: 4},
		{Name: "QNext", Off: 8, Size: 4},
		{Name: "Flags", Off: 12, Size: 4},
		{Name: "Ver", Off: 16, Size: 8},
		{Name: "VLen", Off: 24, Size: 4},
		{Name: "KLen", Off: 28, Size: 2},
		{Name: "Tag", Off: 30, Size: 1},
		{Name: "Bits", Off: 31, Size: 1},
	})
	testutil.CheckDrawing(t, "layout.go", "next (bucket)", entry{})
	if entryHdrSize != 32 {
		t.Errorf("entryHdrSize = %d, want 32", entryHdrSize)
	}
	var e entry
	// Entries sit at 8-aligned arena offsets (okEntry) in a 64-aligned
	// arena: Ver, a 64-bit atomic word, must be 8-aligned in the header,
	// and the 32-bit atomic words 4-aligned.
	if off := unsafe.Offsetof(e.Ver); off%8 != 0 {
		t.Errorf("entry.Ver at %d: not 8-aligned", off)
	}
	for _, f := range []struct {
		name string
		off  uintptr
	}{
		{"Next", unsafe.Offsetof(e.Next)},
		{"Flags", unsafe.Offsetof(e.Flags)},
		{"VLen", unsafe.Offsetof(e.VLen)},
		{"KLen (bitsWord)", unsafe.Offsetof(e.KLen)},
	} {
		if f.off%4 != 0 {
			t.Errorf("entry.%s at %d: not 4-aligned", f.name, f.off)
		}
	}
	// KLen, Tag and Bits are the four bytes of bitsWord, each at the
	// shift its byte has in this machine's order.
	word := unsafe.Offsetof(e.KLen)
	for _, f := range []struct {
		name      string
		off, size uintptr
		shift     uint
	}{
		{"KLen", unsafe.Offsetof(e.KLen), unsafe.Sizeof(e.KLen), klenShift},
		{"Tag", unsafe.Offsetof(e.Tag), unsafe.Sizeof(e.Tag), tagShift},
		{"Bits", unsafe.Offsetof(e.Bits), unsafe.Sizeof(e.Bits), bitsShift},
	} {
		if f.off < word || f.off+f.size > word+4 {
			t.Fatalf("entry.%s at [%d, %d): outside bitsWord [%d, %d)", f.name, f.off, f.off+f.size, word, word+4)
		}
		want := 8 * uint(f.off-word) // little-endian
		if !littleEndian() {
			want = 8 * uint(word+4-f.off-f.size)
		}
		if f.shift != want {
			t.Errorf("%s shift in bitsWord = %d, want %d", f.name, f.shift, want)
		}
	}
}

// littleEndian reports this machine's byte order.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func TestLayoutVer(t *testing.T) {
	if expiryBits != 44 {
		t.Errorf("expiryBits = %d, want 44", expiryBits)
	}
	if expiryMask != 1<<44-1 || verOne != 1<<44 || maxExpiry != expiryMask {
		t.Errorf("expiryMask, verOne, maxExpiry = %#x, %#x, %#x, want %#x, %#x, %#x", expiryMask, verOne, maxExpiry, uint64(1<<44-1), uint64(1<<44), uint64(1<<44-1))
	}
	if y := time.UnixMilli(maxExpiry).UTC().Year(); y != 2527 {
		t.Errorf("maxExpiry is in %d, want 2527 (the expiryBits comment)", y)
	}
	// A version step leaves the expiry alone, and the expiry never reaches
	// the version.
	w := 3*verOne | 12345
	if expiryOf(w) != 12345 || !writing(w) || writing(w+verOne) || expiryOf(w+verOne) != 12345 {
		t.Errorf("Ver word %#x: expiryOf, writing = %d, %v; after a step %d, %v", w, expiryOf(w), writing(w), expiryOf(w+verOne), writing(w+verOne))
	}
	if expiryOf(w|maxExpiry) != maxExpiry || (w|maxExpiry)>>expiryBits != 3 {
		t.Errorf("Ver word with maxExpiry %#x: expiry %d, version %d, want %d, 3", w|maxExpiry, expiryOf(w|maxExpiry), (w|maxExpiry)>>expiryBits, int64(maxExpiry))
	}
}

// TestLayoutEntryChunk pins the drawing of a whole entry chunk, drawn for a
// counter with a 13-byte key: header, key, pad and an 8-byte value at
// valOff, 8-aligned.
func TestLayoutEntryChunk(t *testing.T) {
	const klen = 13
	got := testutil.Drawing(t, "layout.go", "entry header")
	if len(got) != 4 {
		t.Fatalf("entry chunk drawing = %+v, want 4 boxes", got)
	}
	want := []testutil.Cell{
		{Off: 0, End: entryHdrSize, Label: "entry header"},
		{Off: entryHdrSize, End: entryHdrSize + klen, Label: "key"},
		{Off: entryHdrSize + klen, End: valOff(klen), Label: "(pad)"},
		{Off: valOff(klen), End: entrySize(klen, 8), Label: "value"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry chunk drawing box %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, tt := range []struct {
		klen, valOff int
	}{
		{1, 40}, {8, 40}, {9, 48}, {13, 48}, {16, 48}, {17, 56}, {MaxKeyLen, 65568},
	} {
		if got := valOff(tt.klen); got != tt.valOff || got%8 != 0 {
			t.Errorf("valOff(%d) = %d, want %d", tt.klen, got, tt.valOff)
		}
	}
	if got := entrySize(16, 8); got != 56 {
		t.Errorf("entrySize(16, 8) = %d, want 56 (a 16-byte-key counter)", got)
	}
}

func TestLayoutListHdr(t *testing.T) {
	testutil.CheckFields(t, listHdr{}, []testutil.Field{
		{Name: "Len", Off: 0, Size: 4},
		{Name: "Head", Off: 4, Size: 4},
		{Name: "Tail", Off: 8, Size: 4},
		{Name: "_", Off: 12, Size: 4},
	})
	testutil.CheckDrawing(t, "layout.go", "len", listHdr{})
	if listHdrSize != 16 {
		t.Errorf("listHdrSize = %d, want 16", listHdrSize)
	}
}

func TestLayoutNode(t *testing.T) {
	testutil.CheckFields(t, node{}, []testutil.Field{
		{Name: "Next", Off: 0, Size: 4},
		{Name: "Prev", Off: 4, Size: 4},
		{Name: "VLen", Off: 8, Size: 4},
		{Name: "Kind", Off: 12, Size: 1},
		{Name: "_", Off: 13, Size: 3},
	})
	testutil.CheckDrawing(t, "layout.go", "next", node{})
	if nodeHdrSize != 16 {
		t.Errorf("nodeHdrSize = %d, want 16", nodeHdrSize)
	}
	// A node's data starts 8-aligned, as a chunk does.
	if nodeHdrSize%8 != 0 {
		t.Errorf("nodeHdrSize = %d: data not 8-aligned", nodeHdrSize)
	}
}

// TestLayoutShard pins the shard drawing, drawn for a shard of
// shm.MinShardSize with an 8-slot index, and the offsets of shards of other
// index sizes.
func TestLayoutShard(t *testing.T) {
	const min = shm.MinShardSize
	for _, tt := range []struct {
		name      string
		got, want int
	}{
		{"indexOff", indexOff, 320},
		{"slotSize", slotSize, int(unsafe.Sizeof(uint32(0)))},
		{"arenaAlign", arenaAlign, 64},
		{"traceBucketSize", traceBucketSize, arenaAlign},
		{"traceOffset(1)", traceOffset(1), 384},
		{"traceOffset(8)", traceOffset(8), 384},
		{"traceOffset(16)", traceOffset(16), 384},
		{"traceOffset(17)", traceOffset(17), 448},
		{"traceOffset(1024)", traceOffset(1024), 4416},
		{"traceBuckets(64 KiB)", traceBuckets(min), 51},
		{"traceBuckets(640 KiB)", traceBuckets(640 << 10), 512},
		{"traceBuckets(1 GiB)", traceBuckets(1 << 30), 1 << 16},
		{"arenaOffset(8, 64 KiB)", arenaOffset(8, min), 384 + 51*64},
		{"arenaOffset(1024, 64 KiB)", arenaOffset(1024, min), 4416 + 51*64},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if indexOff != shardHdrSize {
		t.Errorf("indexOff = %d, want shardHdrSize %d", indexOff, shardHdrSize)
	}
	// The index ends aligned from 16 slots on: no pad before the traces.
	for n := 1; n <= 1<<20; n *= 2 {
		end := indexOff + n*slotSize
		off := traceOffset(n)
		if off%arenaAlign != 0 || off < end || off-end >= arenaAlign || (n >= 16 && off != end) {
			t.Errorf("traceOffset(%d) = %d, index ends at %d: want the next multiple of %d", n, off, end, arenaAlign)
		}
	}
	// The traces take about a traceShare-th of the shard.
	for size := min; size <= 1<<30; size *= 4 {
		got := traceBuckets(size) * traceBucketSize
		if got > size/traceShare || (got < size/traceShare-traceBucketSize && traceBuckets(size) < maxTraceBuckets) {
			t.Errorf("traces of a %d-byte shard take %d bytes, want about %d", size, got, size/traceShare)
		}
	}
	const n = 8
	want := []testutil.Cell{
		{Off: 0, End: indexOff, Label: "shard header"},
		{Off: indexOff, End: indexOff + n*slotSize, Label: "index [8]uint32"},
		{Off: indexOff + n*slotSize, End: traceOffset(n), Label: "(pad)"},
		{Off: traceOffset(n), End: arenaOffset(n, min), Label: fmt.Sprintf("traces [%d]uint32", traceBuckets(min)*traceBucket)},
		{Off: arenaOffset(n, min), End: min, Label: "arena"},
	}
	got := testutil.Drawing(t, "layout.go", "shard header")
	if len(got) != len(want) {
		t.Fatalf("shard drawing = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shard drawing box %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLayoutKeyLen(t *testing.T) {
	var e entry
	if most := 1<<(8*unsafe.Sizeof(e.KLen)) - 1; MaxKeyLen != most {
		t.Errorf("MaxKeyLen = %d, want %d, the most entry.KLen holds", MaxKeyLen, most)
	}
}
