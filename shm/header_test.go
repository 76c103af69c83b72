package shm

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

func TestHeaderLayout(t *testing.T) {
	var h hdr
	if got := unsafe.Sizeof(h); got != 88 {
		t.Fatalf("Sizeof(hdr) = %d, want 88", got)
	}
	if hdrSize != 88 || checksumOff != 80 {
		t.Fatalf("hdrSize, checksumOff = %d, %d, want 88, 80", hdrSize, checksumOff)
	}
	for _, tt := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"Magic", unsafe.Offsetof(h.Magic), 0},
		{"Version", unsafe.Offsetof(h.Version), 8},
		{"Order", unsafe.Offsetof(h.Order), 12},
		{"Layout", unsafe.Offsetof(h.Layout), 16},
		{"PageSize", unsafe.Offsetof(h.PageSize), 20},
		{"Size", unsafe.Offsetof(h.Size), 24},
		{"Shards", unsafe.Offsetof(h.Shards), 32},
		{"IndexSize", unsafe.Offsetof(h.IndexSize), 36},
		{"ShardOff", unsafe.Offsetof(h.ShardOff), 40},
		{"ShardSize", unsafe.Offsetof(h.ShardSize), 48},
		{"Seed", unsafe.Offsetof(h.Seed), 56},
		{"Clock", unsafe.Offsetof(h.Clock), 64},
		{"CreatedAt", unsafe.Offsetof(h.CreatedAt), 72},
		{"Checksum", unsafe.Offsetof(h.Checksum), 80},
	} {
		if tt.got != tt.want {
			t.Errorf("Offsetof(hdr.%s) = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if len(magic) != 8 {
		t.Errorf("len(magic) = %d, want 8", len(magic))
	}
}

// testHeader is a valid header for a zone of 2 shards of MinShardSize.
func testHeader() Header {
	return Header{
		Version:   Version,
		Layout:    0x1234,
		PageSize:  PageSize,
		Size:      HeaderSize + 2*MinShardSize,
		Shards:    2,
		IndexSize: 1024,
		ShardOff:  HeaderSize,
		ShardSize: MinShardSize,
		Seed:      0xdeadbeefcafe,
		Clock:     ClockUnixMs,
		CreatedAt: 1700000000000,
	}
}

func encoded(h Header) []byte {
	b := make([]byte, HeaderSize)
	encodeHeader(b, h)
	return b
}

// resum recomputes the checksum of the header in b, so that a test can change
// one field and still pass the checksum.
func resum(b []byte) {
	nativeOrder.PutUint64(b[checksumOff:], xxhash.Sum64(b[:checksumOff]))
}

func TestEncodeParseRoundTrip(t *testing.T) {
	h := testHeader()
	got, err := parseHeader(encoded(h), h.Size, h.Layout)
	if err != nil {
		t.Fatalf("parseHeader(encoded) = %v, want nil", err)
	}
	if got != h {
		t.Fatalf("parseHeader(encoded) = %+v, want %+v", got, h)
	}
	if got, err := parseHeader(encoded(h), h.Size, 0); err != nil || got != h {
		t.Fatalf("parseHeader(encoded, layout 0) = %+v, %v, want %+v, nil", got, err, h)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	h := testHeader()
	put32 := func(off int, v uint32) func(b []byte) {
		return func(b []byte) { nativeOrder.PutUint32(b[off:], v); resum(b) }
	}
	put64 := func(off int, v uint64) func(b []byte) {
		return func(b []byte) { nativeOrder.PutUint64(b[off:], v); resum(b) }
	}
	tests := []struct {
		name   string
		mutate func(b []byte)
		len    int   // bytes passed; 0 = all
		size   int64 // file size; 0 = h.Size
		layout uint32
		want   error
	}{
		{name: "valid", want: nil},
		{name: "short slice", len: hdrSize - 1, want: ErrNotZone},
		{name: "small file", size: 100, want: ErrNotZone},
		{name: "empty", len: -1, want: ErrNotZone},
		{name: "magic", mutate: func(b []byte) { b[0] = 'X' }, want: ErrNotZone},
		{name: "magic terminator", mutate: func(b []byte) { b[7] = '!' }, want: ErrNotZone},
		{name: "zeros", mutate: func(b []byte) { clear(b) }, want: ErrNotZone},
		{name: "version", mutate: put32(8, Version+1), want: ErrVersion},
		{name: "version 0", mutate: put32(8, 0), want: ErrVersion},
		{name: "byte order", mutate: put32(12, 0x04030201), want: ErrVersion},
		{name: "layout", layout: 0x9999, want: ErrVersion},
		{name: "checksum", mutate: func(b []byte) { b[checksumOff] ^= 1 }, want: ErrCorrupt},
		{name: "geometry without resum", mutate: func(b []byte) { b[48] ^= 0x10 }, want: ErrCorrupt},
		{name: "seed without resum", mutate: func(b []byte) { b[56] ^= 1 }, want: ErrCorrupt},
		{name: "page size 1000", mutate: put32(20, 1000), want: ErrCorrupt},
		{name: "page size 256", mutate: put32(20, 256), want: ErrCorrupt},
		{name: "shards 3", mutate: put32(32, 3), want: ErrCorrupt},
		{name: "shards 0", mutate: put32(32, 0), want: ErrCorrupt},
		{name: "shards too many", mutate: put32(32, 2*MaxShards), want: ErrCorrupt},
		{name: "shard offset", mutate: put64(40, 2*HeaderSize), want: ErrCorrupt},
		{name: "shard size not a multiple of ShardAlign", mutate: put64(48, MinShardSize+100), want: ErrCorrupt},
		{name: "shard size too small", mutate: put64(48, MinShardSize-PageSize), want: ErrCorrupt},
		{name: "shard size negative", mutate: put64(48, 1<<63), want: ErrCorrupt},
		{name: "index not power of two", mutate: put32(36, 1000), want: ErrCorrupt},
		{name: "index 0", mutate: put32(36, 0), want: ErrCorrupt},
		{name: "index too large", mutate: put32(36, MinShardSize/4), want: ErrCorrupt},
		{name: "clock", mutate: put32(64, 2), want: ErrCorrupt},
		{name: "size disagrees with geometry", mutate: put64(24, uint64(h.Size)+PageSize), size: h.Size + PageSize, want: ErrCorrupt},
		{name: "file truncated", size: h.Size - PageSize, want: ErrCorrupt},
		{name: "file extended", size: h.Size + 1, want: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encoded(h)
			if tt.mutate != nil {
				tt.mutate(b)
			}
			switch {
			case tt.len < 0:
				b = b[:0]
			case tt.len > 0:
				b = b[:tt.len]
			}
			size := tt.size
			if size == 0 {
				size = h.Size
			}
			layout := tt.layout
			if layout == 0 {
				layout = h.Layout
			}
			got, err := parseHeader(b, size, layout)
			if tt.want == nil {
				if err != nil || got != h {
					t.Fatalf("parseHeader = %+v, %v, want %+v, nil", got, err, h)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("parseHeader = %v, want %v", err, tt.want)
			}
			if got != (Header{}) {
				t.Fatalf("parseHeader with error %v returned header %+v, want zero", err, got)
			}
		})
	}
}

func TestGeometry(t *testing.T) {
	tests := []struct {
		size   int64
		shards int
		want   Header // Size, Shards, ShardSize, IndexSize
	}{
		{HeaderSize + MinShardSize, 0, Header{Size: HeaderSize + MinShardSize, Shards: 1, ShardSize: MinShardSize, IndexSize: 1024}},
		{HeaderSize + MinShardSize + ShardAlign - 1, 1, Header{Size: HeaderSize + MinShardSize, Shards: 1, ShardSize: MinShardSize, IndexSize: 1024}},
		{HeaderSize + MinShardSize + PageSize - 1, 1, Header{Size: HeaderSize + MinShardSize, Shards: 1, ShardSize: MinShardSize, IndexSize: 1024}},
		{HeaderSize + MinShardSize + PageSize, 1, Header{Size: HeaderSize + MinShardSize + PageSize, Shards: 1, ShardSize: MinShardSize + PageSize, IndexSize: 1024}},
		{HeaderSize + 10<<20 - 1, 2, Header{Size: HeaderSize + 10<<20 - 2*PageSize, Shards: 2, ShardSize: 5<<20 - PageSize, IndexSize: 1 << 16}},
		{10 << 20, 0, Header{Size: HeaderSize + 16*159*PageSize, Shards: 16, ShardSize: 159 * PageSize, IndexSize: 8192}},
		{1 << 20, 0, Header{Size: HeaderSize + 255*PageSize, Shards: 1, ShardSize: 255 * PageSize, IndexSize: 16384}},
		{1<<20 + 12345, 2, Header{Size: HeaderSize + 2*129*PageSize, Shards: 2, ShardSize: 129 * PageSize, IndexSize: 8192}},
		{HeaderSize + 1<<20, 0, Header{Size: HeaderSize + 1<<20, Shards: 2, ShardSize: 1 << 19, IndexSize: 8192}},
		{HeaderSize + 64<<20, 0, Header{Size: HeaderSize + 64<<20, Shards: 64, ShardSize: 1 << 20, IndexSize: 16384}},
		{HeaderSize + 1<<30, 0, Header{Size: HeaderSize + 1<<30, Shards: 64, ShardSize: 1 << 24, IndexSize: 1 << 18}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("size=%d/shards=%d", tt.size, tt.shards), func(t *testing.T) {
			h, err := Geometry(tt.size, tt.shards, 0)
			if err != nil {
				t.Fatalf("Geometry(%d, %d, 0) = %v", tt.size, tt.shards, err)
			}
			got := Header{Size: h.Size, Shards: h.Shards, ShardSize: h.ShardSize, IndexSize: h.IndexSize}
			if got != tt.want {
				t.Fatalf("Geometry(%d, %d, 0) = %+v, want %+v", tt.size, tt.shards, got, tt.want)
			}
			if h.Size > tt.size {
				t.Fatalf("Geometry(%d, %d, 0).Size = %d, larger than asked", tt.size, tt.shards, h.Size)
			}
			if err := h.validate(h.Size); err != nil {
				t.Fatalf("Geometry(%d, %d, 0) does not validate: %v", tt.size, tt.shards, err)
			}
		})
	}
}

func TestGeometryBadOptions(t *testing.T) {
	tests := []struct {
		name   string
		size   int64
		shards int
	}{
		{"below minimum", HeaderSize + MinShardSize - 1, 0},
		{"zero", 0, 0},
		{"negative", -1, 0},
		{"shards 3", 1 << 22, 3},
		{"shards negative", 1 << 22, -2},
		{"shards too many", 1 << 40, 2 * MaxShards},
		{"shards too small", HeaderSize + 2*MinShardSize - 1, 2},
		{"shards too large", HeaderSize + 2*MaxShardSize + 2*PageSize, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Geometry(tt.size, tt.shards, 0); !errors.Is(err, ErrBadOptions) {
				t.Fatalf("Geometry(%d, %d, 0) = %v, want ErrBadOptions", tt.size, tt.shards, err)
			}
		})
	}
}

// Every geometry that Geometry accepts must pass validation, whatever the
// bytes per slot, or a created zone could never be attached again.
func TestGeometryValidates(t *testing.T) {
	for _, size := range []int64{HeaderSize + MinShardSize, HeaderSize + 25*PageSize, 1 << 20, 3<<20 + 777, 64 << 20} {
		for _, shards := range []int{0, 1, 2} {
			for _, bps := range []int64{-1, 0, 1, 4, 8, 10, 16, 64, 1000, 1 << 40} {
				h, err := Geometry(size, shards, bps)
				if err != nil {
					continue
				}
				if err := h.validate(h.Size); err != nil {
					t.Errorf("Geometry(%d, %d, %d) = %+v, which fails validation: %v", size, shards, bps, h, err)
				}
			}
		}
	}
}
