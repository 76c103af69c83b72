package dict

import (
	"encoding/binary"
	"math/bits"
)

// hashKey is XXH64 of key with the zone's seed, as xxhash.NewWithSeed(seed)
// computes it (a test pins the equality), in one call that neither copies nor
// allocates: xxhash's Digest copies short inputs into its buffer, which costs
// more than the rest of a lookup. A random seed per zone keeps an outsider
// from choosing keys that share a bucket.
func hashKey(seed uint64, key string) uint64 {
	const (
		p1 uint64 = 11400714785074694791
		p2 uint64 = 14029467366897019727
		p3 uint64 = 1609587929392839161
		p4 uint64 = 9650029242287828579
		p5 uint64 = 2870177450012600261
	)
	b := stringBytes(key)
	n := len(b)
	var h uint64
	if n >= 32 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		for len(b) >= 32 {
			v1 = round(v1, binary.LittleEndian.Uint64(b[0:8]))
			v2 = round(v2, binary.LittleEndian.Uint64(b[8:16]))
			v3 = round(v3, binary.LittleEndian.Uint64(b[16:24]))
			v4 = round(v4, binary.LittleEndian.Uint64(b[24:32]))
			b = b[32:]
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = mergeRound(h, v1)
		h = mergeRound(h, v2)
		h = mergeRound(h, v3)
		h = mergeRound(h, v4)
	} else {
		h = seed + p5
	}
	h += uint64(n)
	for ; len(b) >= 8; b = b[8:] {
		h ^= round(0, binary.LittleEndian.Uint64(b[:8]))
		h = bits.RotateLeft64(h, 27)*p1 + p4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b[:4])) * p1
		h = bits.RotateLeft64(h, 23)*p2 + p3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * p5
		h = bits.RotateLeft64(h, 11) * p1
	}
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= p3
	h ^= h >> 32
	return h
}

func round(acc, input uint64) uint64 {
	acc += input * 14029467366897019727
	acc = bits.RotateLeft64(acc, 31)
	return acc * 11400714785074694791
}

func mergeRound(acc, val uint64) uint64 {
	acc ^= round(0, val)
	return acc*11400714785074694791 + 9650029242287828579
}
