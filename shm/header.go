package shm

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// Header is a validated copy of a zone's header. Sizes and offsets are in
// bytes.
type Header struct {
	Version   uint32 // the format version
	Layout    uint32 // the shard layout of the layer above, or 0
	PageSize  int
	Size      int64  // the whole file
	Shards    int    // a power of two
	IndexSize int    // index slots per shard, a power of two
	ShardOff  int64  // the offset of shard 0
	ShardSize int64  // bytes per shard, a multiple of ShardAlign; Geometry makes whole pages
	Seed      uint64 // the hash seed
	Clock     uint32 // the clock kind, ClockUnixMs
	CreatedAt int64  // Unix ms
}

func encodeHeader(b []byte, h Header) { encodeWith(b, h, magic) }

// encodeMarker writes the marker of an unfinished creation: the header of
// the zone being created, under initMagic instead of magic. No Open attaches
// it; an Open that may create a zone finishes it (zone.go).
func encodeMarker(b []byte, h Header) { encodeWith(b, h, initMagic) }

func encodeWith(b []byte, h Header, m string) {
	var raw hdr
	copy(raw.Magic[:], m)
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

// isMarker reports whether b, the first bytes of a file of fileSize bytes,
// is the intact marker of a creation that did not finish: initMagic, this
// machine's byte order, a checksum that matches, and a file no larger than
// the size its creator meant (the creator writes the marker in an empty file,
// then extends it to that size). Any other file is not one this package began
// to create, and is never written.
func isMarker(b []byte, fileSize int64) bool {
	if len(b) < hdrSize || fileSize < int64(hdrSize) || string(b[:len(initMagic)]) != initMagic {
		return false
	}
	raw := overlay(b)
	if raw.Order != orderMark || raw.Checksum != xxhash.Sum64(b[:checksumOff]) {
		return false
	}
	return raw.Size <= HeaderSize+MaxShards*MaxShardSize && uint64(fileSize) <= raw.Size
}

// overlay returns a copy of the header in b, which holds at least hdrSize
// bytes, read through the hdr overlay: every field is read at the offset hdr
// gives it, in this machine's byte order. The copy leaves b's alignment and
// later changes to b out of the caller's concern.
func overlay(b []byte) hdr {
	var raw hdr
	copy(raw.bytes(), b[:hdrSize])
	return raw
}

// nativeOrder reads and writes integers in this machine's byte order, the
// order the hdr overlay reads them in.
var nativeOrder = binary.NativeEndian

// Advice closing an ErrVersion message: what to do with a zone this build
// cannot read. dump and restore carry the keys, values and expiry times of a
// zone from one format to another, since their JSON lines do not depend on
// the zone's layout.
const (
	adviceVersion = "recreate the zone with shmctl create, or dump it with the shmctl of its version and restore the dump with this one"
	adviceOrder   = "the zone was written on a machine of the other byte order: dump it there with shmctl and restore the dump here"
)

// parseHeader validates the first bytes of a zone file of fileSize bytes and
// returns its header. It checks, in order, the size, the magic number, the byte
// order and version, the checksum and the geometry against fileSize, so no
// offset is trusted before the bytes that carry it are known to be intact. A
// layout of 0 accepts any layout.
func parseHeader(b []byte, fileSize int64, layout uint32) (Header, error) {
	if len(b) < hdrSize || fileSize < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is too small", ErrNotZone, fileSize)
	}
	if string(b[:len(magic)]) != magic {
		return Header{}, fmt.Errorf("%w: bad magic %q", ErrNotZone, b[:len(magic)])
	}
	raw := overlay(b)
	if raw.Order != orderMark {
		return Header{}, fmt.Errorf("%w: byte order mark %#x, want %#x; %s", ErrVersion, raw.Order, orderMark, adviceOrder)
	}
	if raw.Version != Version {
		return Header{}, fmt.Errorf("%w: format version %d, this build reads %d; %s", ErrVersion, raw.Version, Version, adviceVersion)
	}
	if sum, want := raw.Checksum, xxhash.Sum64(b[:checksumOff]); sum != want {
		return Header{}, fmt.Errorf("%w: header checksum %#x, computed %#x", ErrCorrupt, sum, want)
	}
	h := Header{
		Version:   raw.Version,
		Layout:    raw.Layout,
		PageSize:  int(raw.PageSize),
		Size:      int64(raw.Size),
		Shards:    int(raw.Shards),
		IndexSize: int(raw.IndexSize),
		ShardOff:  int64(raw.ShardOff),
		ShardSize: int64(raw.ShardSize),
		Seed:      raw.Seed,
		Clock:     raw.Clock,
		CreatedAt: raw.CreatedAt,
	}
	if layout != 0 && h.Layout != layout {
		return Header{}, fmt.Errorf("%w: shard layout %#x, this build reads %#x; %s", ErrVersion, h.Layout, layout, adviceVersion)
	}
	if err := h.validate(fileSize); err != nil {
		return Header{}, err
	}
	return h, nil
}

func (h Header) validate(fileSize int64) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	switch {
	case h.PageSize < 512 || h.PageSize > 1<<16 || bits.OnesCount(uint(h.PageSize)) != 1:
		return bad("page size %d", h.PageSize)
	case h.Shards < 1 || h.Shards > MaxShards || bits.OnesCount(uint(h.Shards)) != 1:
		return bad("shard count %d", h.Shards)
	case h.ShardOff != HeaderSize:
		return bad("shard offset %d", h.ShardOff)
	case h.ShardSize < MinShardSize || h.ShardSize > MaxShardSize || h.ShardSize%ShardAlign != 0:
		return bad("shard size %d", h.ShardSize)
	case h.IndexSize < 1 || bits.OnesCount(uint(h.IndexSize)) != 1 || int64(h.IndexSize)*4 > h.ShardSize/2:
		return bad("index size %d for shard size %d", h.IndexSize, h.ShardSize)
	case h.Clock != ClockUnixMs:
		return bad("clock kind %d", h.Clock)
	}
	want := h.ShardOff + int64(h.Shards)*h.ShardSize
	if h.Size != want {
		return bad("size %d, geometry says %d", h.Size, want)
	}
	if fileSize != h.Size {
		return bad("file is %d bytes, header says %d (truncated or extended)", fileSize, h.Size)
	}
	return nil
}

// Geometry chooses the shard count, shard size and index size of a zone of
// size bytes. It returns them in a Header, with no Layout, Seed or
// CreatedAt. The zone's size is rounded down so that each shard is a
// whole number of pages (DESIGN.md, section 1a).
//
// shards is the shard count, a power of two. 0 chooses it from the size:
// one shard per 512 KiB, a power of two from 1 to 64. bytesPerSlot is the
// expected bytes of shard per index slot. 0 or less means 64. The index
// takes at most half of a shard.
//
// Geometry returns ErrBadOptions if size is below HeaderSize+MinShardSize,
// or if shards is not a power of two from 1 to MaxShards. It also returns
// ErrBadOptions if a shard would be smaller than MinShardSize or larger
// than MaxShardSize.
func Geometry(size int64, shards int, bytesPerSlot int64) (Header, error) {
	if size < HeaderSize+MinShardSize {
		return Header{}, fmt.Errorf("%w: size %d is below the minimum %d", ErrBadOptions, size, HeaderSize+MinShardSize)
	}
	avail := size - HeaderSize
	if shards == 0 {
		shards = 1
		for shards < 64 && avail/int64(shards*2) >= 512<<10 {
			shards *= 2
		}
	}
	if shards < 1 || shards > MaxShards || bits.OnesCount(uint(shards)) != 1 {
		return Header{}, fmt.Errorf("%w: shard count %d is not a power of two from 1 to %d", ErrBadOptions, shards, MaxShards)
	}
	shardSize := avail / int64(shards) &^ (PageSize - 1)
	if shardSize < MinShardSize {
		return Header{}, fmt.Errorf("%w: %d shards of %d bytes; a shard needs %d", ErrBadOptions, shards, shardSize, MinShardSize)
	}
	if shardSize > MaxShardSize {
		return Header{}, fmt.Errorf("%w: shards of %d bytes exceed %d; use more shards", ErrBadOptions, shardSize, int64(MaxShardSize))
	}
	if bytesPerSlot <= 0 {
		bytesPerSlot = 64
	}
	// The power of two nearest to shardSize/bytesPerSlot.
	want := shardSize / bytesPerSlot
	index := int64(1)
	for index*2 <= want {
		index *= 2
	}
	if want-index > index*2-want {
		index *= 2
	}
	// The index may take at most half the shard (validate refuses more), so
	// a small bytesPerSlot must not make a zone that cannot be attached.
	for index > 1 && index*4 > shardSize/2 {
		index /= 2
	}
	return Header{
		Version:   Version,
		PageSize:  PageSize,
		Size:      HeaderSize + int64(shards)*shardSize,
		Shards:    shards,
		IndexSize: int(index),
		ShardOff:  HeaderSize,
		ShardSize: shardSize,
		Clock:     ClockUnixMs,
	}, nil
}
