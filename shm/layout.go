package shm

import (
	"encoding/binary"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// The zone file:
//
//	0                    HeaderSize          HeaderSize+ShardSize
//	+--------------------+-------------------+-------------------+-- ... --+
//	| header page        | shard 0           | shard 1           |         |
//	+--------------------+-------------------+-------------------+-- ... --+
//
// The header page (HeaderSize bytes; only the first hdrSize, 88, are defined):
//
//	0        8        12       16       20       24               32
//	+--------+--------+--------+--------+--------+----------------+
//	| magic  |version | order  | layout |pagesize| size           |
//	+--------+--------+--------+--------+--------+----------------+
//	32       36       40                48                56
//	+--------+--------+----------------+----------------+----------------+
//	| shards | index  | shardOff       | shardSize      | seed           |
//	+--------+--------+----------------+----------------+----------------+
//	64       68       72               80               88
//	+--------+--------+----------------+----------------+
//	| clock  | (pad)  | createdAt (ms) | checksum       |
//	+--------+--------+----------------+----------------+
//
// Every field is immutable after create and covered by the checksum, an
// xxhash64 of the bytes before it. Integers are in the creating machine's byte
// order; the order word tells another byte order apart.

const (
	// HeaderSize is the size of the header page; shards start after it.
	HeaderSize = 4096
	// PageSize is the page size zones are created with.
	PageSize = 4096
	// Version is the format version of the header and shard geometry.
	Version = 1

	magic     = "SHMZONE\x00"
	orderMark = 0x01020304

	// Smallest and largest shard, and most shards.
	MinShardSize = 16 * PageSize
	MaxShardSize = 1 << 32
	MaxShards    = 4096
)

// hdr is the overlay of the header's first bytes. It is pointer-free and
// fixed-width; its size and offsets are pinned by tests.
type hdr struct {
	Magic     [8]byte // immutable after create
	Version   uint32  // immutable after create
	Order     uint32  // immutable after create: orderMark in the writer's order
	Layout    uint32  // immutable after create: the shard layout's identity
	PageSize  uint32  // immutable after create
	Size      uint64  // immutable after create: whole file, in bytes
	Shards    uint32  // immutable after create: a power of two
	IndexSize uint32  // immutable after create: index slots per shard, a power of two
	ShardOff  uint64  // immutable after create: offset of shard 0
	ShardSize uint64  // immutable after create: bytes per shard, a multiple of PageSize
	Seed      uint64  // immutable after create: hash seed
	Clock     uint32  // immutable after create: clock kind (ClockUnixMs)
	_         uint32  // padding to align CreatedAt
	CreatedAt int64   // immutable after create: Unix ms
	Checksum  uint64  // immutable after create: xxhash64 of the bytes before it
}

const (
	hdrSize     = int(unsafe.Sizeof(hdr{}))
	checksumOff = int(unsafe.Offsetof(hdr{}.Checksum))
)

// bytes returns the overlay's bytes; they alias h.
func (h *hdr) bytes() []byte { return unsafe.Slice((*byte)(unsafe.Pointer(h)), hdrSize) }

// Compile-time guards: the overlay must stay 88 bytes and fit the header page.
var (
	_ [hdrSize - 88]struct{}
	_ [88 - hdrSize]struct{}
	_ [HeaderSize - hdrSize]struct{}
)

// ClockUnixMs is the only clock kind: expiry times are Unix milliseconds.
const ClockUnixMs = 1

// Header is a validated copy of a zone's header.
type Header struct {
	Version   uint32
	Layout    uint32
	PageSize  int
	Size      int64
	Shards    int
	IndexSize int
	ShardOff  int64
	ShardSize int64
	Seed      uint64
	Clock     uint32
	CreatedAt int64 // Unix ms
}

func encodeHeader(b []byte, h Header) {
	var raw hdr
	copy(raw.Magic[:], magic)
	raw.Version = h.Version
	raw.Order = orderMark
	raw.Layout = h.Layout
	raw.PageSize = uint32(h.PageSize)
	raw.Size = uint64(h.Size)
	raw.Shards = uint32(h.Shards)
	raw.IndexSize = uint32(h.IndexSize)
	raw.ShardOff = uint64(h.ShardOff)
	raw.ShardSize = uint64(h.ShardSize)
	raw.Seed = h.Seed
	raw.Clock = h.Clock
	raw.CreatedAt = h.CreatedAt
	src := raw.bytes()
	raw.Checksum = xxhash.Sum64(src[:checksumOff])
	copy(b[:hdrSize], src)
}

// isBlankHeader reports whether the header bytes are all zero: a zone whose
// creator died before it wrote the header (I1).
func isBlankHeader(b []byte) bool {
	if len(b) < hdrSize {
		return false
	}
	for _, c := range b[:hdrSize] {
		if c != 0 {
			return false
		}
	}
	return true
}

// nativeOrder reads header integers in this machine's byte order.
var nativeOrder = binary.NativeEndian
