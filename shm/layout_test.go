package shm

import (
	"strings"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The layout tests pin every overlay field and every offset constant to the
// numbers drawn in layout.go: a change to the layout must change this file
// and the drawing together.

func TestLayoutHdr(t *testing.T) {
	testutil.CheckFields(t, hdr{}, []testutil.Field{
		{Name: "Magic", Off: 0, Size: 8},
		{Name: "Version", Off: 8, Size: 4},
		{Name: "Order", Off: 12, Size: 4},
		{Name: "Layout", Off: 16, Size: 4},
		{Name: "PageSize", Off: 20, Size: 4},
		{Name: "Size", Off: 24, Size: 8},
		{Name: "Shards", Off: 32, Size: 4},
		{Name: "IndexSize", Off: 36, Size: 4},
		{Name: "ShardOff", Off: 40, Size: 8},
		{Name: "ShardSize", Off: 48, Size: 8},
		{Name: "Seed", Off: 56, Size: 8},
		{Name: "Clock", Off: 64, Size: 4},
		{Name: "_", Off: 68, Size: 4},
		{Name: "CreatedAt", Off: 72, Size: 8},
		{Name: "Checksum", Off: 80, Size: 8},
	})
	testutil.CheckDrawing(t, "layout.go", "magic", hdr{})
	if hdrSize != 88 || checksumOff != 80 {
		t.Errorf("hdrSize, checksumOff = %d, %d, want 88, 80", hdrSize, checksumOff)
	}
	if len(magic) != 8 || len(initMagic) != 8 {
		t.Errorf("len(magic), len(initMagic) = %d, %d, want 8, 8", len(magic), len(initMagic))
	}
}

// TestLayoutHeaderDecodedAsDrawn writes a header field by field at the
// offsets the drawing gives, and checks that parseHeader reads each where it
// was written: the decoder, the overlay and the drawing agree.
func TestLayoutHeaderDecodedAsDrawn(t *testing.T) {
	h := testHeader()
	values := map[string]uint64{
		"version":   uint64(h.Version),
		"order":     orderMark,
		"layout":    uint64(h.Layout),
		"pagesize":  uint64(h.PageSize),
		"size":      uint64(h.Size),
		"shards":    uint64(h.Shards),
		"index":     uint64(h.IndexSize),
		"shardOff":  uint64(h.ShardOff),
		"shardSize": uint64(h.ShardSize),
		"seed":      h.Seed,
		"clock":     uint64(h.Clock),
		"(pad)":     0,
		"createdAt": uint64(h.CreatedAt),
	}
	b := make([]byte, HeaderSize)
	for _, c := range testutil.Drawing(t, "layout.go", "magic") {
		name := c.Label
		if name != "(pad)" {
			name, _, _ = strings.Cut(name, " ")
		}
		switch v, ok := values[name]; {
		case name == "magic":
			copy(b[c.Off:c.End], magic)
		case name == "checksum":
			// Summed last, below.
		case !ok:
			t.Fatalf("drawn field %q at [%d, %d): no value for it", c.Label, c.Off, c.End)
		case c.End-c.Off == 4:
			nativeOrder.PutUint32(b[c.Off:], uint32(v))
		case c.End-c.Off == 8:
			nativeOrder.PutUint64(b[c.Off:], v)
		default:
			t.Fatalf("drawn field %q is %d bytes", c.Label, c.End-c.Off)
		}
	}
	resum(b)
	got, err := parseHeader(b, h.Size, h.Layout)
	if err != nil || got != h {
		t.Fatalf("parseHeader(header written as drawn) = %+v, %v, want %+v, nil", got, err, h)
	}
	if !isMarker(encodedMarker(h), h.Size) {
		t.Errorf("isMarker(encodeMarker(h)) = false, want true")
	}
}

func encodedMarker(h Header) []byte {
	b := make([]byte, HeaderSize)
	encodeMarker(b, h)
	return b
}

func TestLayoutSlotTable(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want int
	}{
		{"HeaderSize", HeaderSize, 4096},
		{"slotTableOff", slotTableOff, 1024},
		{"slotSize", slotSize, 4},
		{"Slots", Slots, 768},
		{"slotByte(0)", int(slotByte(0)), 1024},
		{"slotByte(1)", int(slotByte(1)), 1028},
		{"slotByte(Slots-1)", int(slotByte(Slots - 1)), 4092},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	want := []testutil.Cell{
		{Off: hdrSize, End: slotTableOff, Label: "registry"},
		{Off: slotTableOff, End: slotTableOff + slotSize, Label: "gen 0"},
		{Off: slotTableOff + slotSize, End: slotTableOff + 2*slotSize, Label: "gen 1"},
		{Off: slotTableOff + 2*slotSize, End: HeaderSize - slotSize, Label: ""},
		{Off: HeaderSize - slotSize, End: HeaderSize, Label: "gen Slots-1"},
	}
	got := testutil.Drawing(t, "layout.go", "registry")
	if len(got) != len(want) {
		t.Fatalf("slot table drawing = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slot table drawing box %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Each generation word is a uint32 read and written atomically: it
	// must be 4-aligned in the mapping, which is page-aligned.
	if slotTableOff%4 != 0 || slotSize != 4 {
		t.Errorf("slotTableOff %d, slotSize %d: generation words misaligned", slotTableOff, slotSize)
	}
}

// TestLayoutRegistry pins the registry's offsets and its record to the
// drawings in layout.go.
func TestLayoutRegistry(t *testing.T) {
	testutil.CheckFields(t, regSlot{}, []testutil.Field{
		{Name: "Seq", Off: 0, Size: 4},
		{Name: "Used", Off: 4, Size: 4},
		{Name: "Key", Off: 8, Size: 8},
		{Name: "Data", Off: 16, Size: 40},
	})
	testutil.CheckDrawing(t, "layout.go", "seq", regSlot{})
	tests := []struct {
		name      string
		got, want int
	}{
		{"regLockOff", regLockOff, 88},
		{"regGenOff", regGenOff, 96},
		{"regSlotsOff", regSlotsOff, 104},
		{"record 1", regSlotsOff + regSlotSize, 160},
		{"regEnd", regEnd, 1000},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	want := []testutil.Cell{
		{Off: regLockOff, End: regGenOff, Label: "regLock"},
		{Off: regGenOff, End: regSlotsOff, Label: "regGen"},
		{Off: regSlotsOff, End: regSlotsOff + regSlotSize, Label: "record 0"},
		{Off: regSlotsOff + regSlotSize, End: regEnd, Label: ""},
		{Off: regEnd, End: slotTableOff, Label: "(zero)"},
	}
	got := testutil.Drawing(t, "layout.go", "regLock")
	if len(got) != len(want) {
		t.Fatalf("registry drawing = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("registry drawing box %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
