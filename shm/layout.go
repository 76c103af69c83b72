package shm

import "unsafe"

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
//	32       36       40               48               56               64
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
//
// The bytes from hdrSize to slotTableOff hold the registry (registry.go): a
// lock word, a generation word and RegSlots records of regSlotSize bytes.
// They are mutable and outside the checksum. A zone of this version made
// before the registry has them zero, which is an empty registry.
//
//	88       96       104          160                    1000      1024
//	+--------+--------+------------+------ ... -----------+---------+
//	| regLock| regGen | record 0   |                      | (zero)  |
//	+--------+--------+------------+------ ... -----------+---------+
//	                  regSlotsOff                         regEnd
//
// A record (regSlot):
//
//	0        4        8                16                               56
//	+--------+--------+----------------+------------ ... ---------------+
//	| seq    | used   | key            | data [RecordWords]uint64       |
//	+--------+--------+----------------+------------ ... ---------------+
//
// The rest of the header page, from slotTableOff, is the owner slot table
// (lock.go, owner.go): Slots generation words of 4 bytes, mutable, outside
// the checksum. Slot i is owned by whoever holds an OFD write lock on the
// file's byte slotByte(i), the first byte of its generation word.
//
//	88           1024         1028         1032              4092          4096
//	+------------+------------+------------+------ ... ------+-------------+
//	| registry   | gen 0      | gen 1      |                 | gen Slots-1 |
//	+------------+------------+------------+------ ... ------+-------------+
//	             slotTableOff                                              HeaderSize

const (
	// HeaderSize is the size of the header page in bytes. Shards start
	// after it.
	HeaderSize = 4096
	// PageSize is the page size in bytes that zones are created with.
	PageSize = 4096
	// Version is the format version of the header, the owner slot table and
	// the shard geometry. Open refuses a zone of another version with
	// ErrVersion.
	Version = 2

	magic     = "SHMZONE\x00"
	initMagic = "SHMZINIT" // the magic of an unfinished creation's marker (zone.go)
	orderMark = 0x01020304

	// ShardAlign is the alignment in bytes that a zone's shards must have:
	// a cache line, so that no two shards share one. Geometry makes shards
	// of whole pages. Zones whose shards are multiples of ShardAlign alone
	// still attach.
	ShardAlign = 64

	// MinShardSize is the smallest shard, in bytes.
	MinShardSize = 16 * PageSize
	// MaxShardSize is the largest shard, in bytes.
	MaxShardSize = 1 << 32
	// MaxShards is the most shards a zone has.
	MaxShards = 4096
)

// hdr is the overlay of the header's first bytes, and the one source of
// their offsets: encodeWith writes the header through it, and parseHeader
// and isMarker read the header through it. It is pointer-free and
// fixed-width; its fields' offsets and sizes are pinned, with the drawing
// above, by layout_test.go.
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

// ClockUnixMs is the only clock kind. Expiry times are Unix milliseconds.
const ClockUnixMs = 1

// The owner slot table, in the header page after the header.
const (
	slotTableOff = 1024 // leaves the header room to grow
	slotSize     = 4    // a uint32 generation per slot
	// Slots is how many zones may be open read-write at once on one file,
	// across every process. Each holds one slot.
	Slots = (HeaderSize - slotTableOff) / slotSize
	// slotBits are enough bits for a slot's index (OwnerTag).
	slotBits = 10
)

// Guards: the table starts past the header and ends with the header page.
var (
	_ [slotTableOff - hdrSize]struct{}
	_ [HeaderSize - slotTableOff - Slots*slotSize]struct{}
	_ [Slots*slotSize - (HeaderSize - slotTableOff)]struct{}
	_ [1<<slotBits - Slots]struct{}
)

// slotByte returns the file offset whose OFD lock owns slot i.
func slotByte(i int) int64 { return int64(slotTableOff + i*slotSize) }

// slotGen returns slot i's generation word in a mapping of the zone. Access
// rule: written only by the holder of the slot's OFD lock, with an atomic
// add when it claims the slot; read by anyone with an atomic load.
func slotGen(data []byte, i int) *uint32 {
	off := slotTableOff + i*slotSize
	_ = data[off+slotSize-1]
	return (*uint32)(unsafe.Pointer(&data[off]))
}

// The registry, between the header and the owner slot table.
const (
	regLockOff  = hdrSize        // the registry's lock word
	regGenOff   = regLockOff + 8 // the registry's generation word
	regSlotsOff = regGenOff + 8  // record 0
	regSlotSize = int(unsafe.Sizeof(regSlot{}))
	// RegSlots is how many records the registry holds.
	RegSlots = 16
	regEnd   = regSlotsOff + RegSlots*regSlotSize
	// RecordWords is how many 64-bit words of data a record holds.
	RecordWords = 5
)

// regSlot is the overlay of one registry record. A writer holds the
// registry's lock and makes Seq odd while it writes; a reader copies the
// record and keeps the copy only if Seq was even and unchanged around it.
type regSlot struct {
	Seq  uint32              // under the registry lock, read atomically: odd while the record is written
	Used uint32              // under the registry lock, read atomically: 1 when the record holds Key, else 0
	Key  uint64              // under the registry lock, read atomically: the caller's key, never 0
	Data [RecordWords]uint64 // under the registry lock, read atomically: the caller's words
}

// Guards: a record is 56 bytes, and the registry ends before the slot table.
var (
	_ [regSlotSize - 56]struct{}
	_ [56 - regSlotSize]struct{}
	_ [slotTableOff - regEnd]struct{}
)

// regSlotAt returns registry record i in a mapping of the zone.
func regSlotAt(data []byte, i int) *regSlot {
	off := regSlotsOff + i*regSlotSize
	_ = data[off+regSlotSize-1]
	if off&7 != 0 {
		panic("shm: misaligned registry record")
	}
	return (*regSlot)(unsafe.Pointer(&data[off]))
}
