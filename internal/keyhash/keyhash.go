// Package keyhash is the hash of a zone's keys: XXH3-64 with a seed, as
// XXH3_64bits_withSeed of xxHash 0.8 computes it.
//
// Every process of a zone must compute the same function, so it is part of
// the zone's layout. Sum neither copies nor allocates.
package keyhash

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Sum is XXH3-64 of key with seed, as XXH3_64bits_withSeed of xxHash 0.8
// computes it. A test pins it against vectors from the reference library
// (testdata/xxh3.txt). dict's Layout names it. A random seed per zone
// keeps an outsider from choosing keys that share a bucket.
//
// Keys of up to 32 bytes take a path without a call. That is the common
// case: an address, a user id, or a limiter's key. dict/DESIGN.md, section
// 4, says why XXH3 was chosen over XXH64.
func Sum(seed uint64, key string) uint64 {
	b := stringBytes(key)
	n := len(b)
	if n > 16 {
		if n <= 32 {
			// xxh3Over16's first case, here to save a call.
			return xxh3Avalanche(uint64(n)*prime64x1 + mix16(b, xxh3Secret[:], seed) + mix16(b[n-16:], xxh3Secret[16:], seed))
		}
		return xxh3Over16(seed, b)
	}
	if n > 8 {
		lo := le64(b) ^ (xxh3Flip9 + seed)
		hi := le64(b[n-8:]) ^ (xxh3Flip9b - seed)
		return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + mulFold(lo, hi))
	}
	if n >= 4 {
		seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
		in := uint64(binary.LittleEndian.Uint32(b[n-4:])) + uint64(binary.LittleEndian.Uint32(b))<<32
		h := in ^ (xxh3Flip4 - seed)
		h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
		h *= xxh3Mx2
		h ^= h>>35 + uint64(n)
		h *= xxh3Mx2
		return h ^ h>>28
	}
	if n > 0 {
		c := uint32(b[0])<<16 | uint32(b[n>>1])<<24 | uint32(b[n-1]) | uint32(n)<<8
		return xxh64Avalanche(uint64(c) ^ (xxh3Flip1 + seed))
	}
	return xxh64Avalanche(seed ^ xxh3Flip0)
}

// XXH3's constants. The flips are XORs of words of the default secret that the
// short inputs use, folded here once.
const (
	prime32x1 = 0x9E3779B1
	prime32x2 = 0x85EBCA77
	prime32x3 = 0xC2B2AE3D
	prime64x1 = 0x9E3779B185EBCA87
	prime64x2 = 0xC2B2AE3D27D4EB4F
	prime64x3 = 0x165667B19E3779F9
	prime64x4 = 0x85EBCA77C2B2AE63
	prime64x5 = 0x27D4EB2F165667C5
	xxh3Mx1   = 0x165667919E3779F9
	xxh3Mx2   = 0x9FB21C651E98DF25

	xxh3Flip0  = 0x8726F9105DC21DDC // secret[56:64] ^ secret[64:72]
	xxh3Flip1  = 0x87275A9B         // secret[0:4] ^ secret[4:8]
	xxh3Flip4  = 0xC73AB174C5ECD5A2 // secret[8:16] ^ secret[16:24]
	xxh3Flip9  = 0x6782737BEA4239B9 // secret[24:32] ^ secret[32:40]
	xxh3Flip9b = 0xAF56BC3B0996523A // secret[40:48] ^ secret[48:56]
)

// xxh3Secret is XXH3's default secret (kSecret).
var xxh3Secret = [xxh3SecretSize]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

const (
	xxh3SecretSize = 192
	xxh3Stripe     = 64                                // bytes an accumulation step reads
	xxh3Stripes    = (xxh3SecretSize - xxh3Stripe) / 8 // stripes in a block
	xxh3Block      = xxh3Stripe * xxh3Stripes          // 1,024 bytes
	xxh3MidLast    = 136 - 17                          // the 129-240 path's last 16 bytes' secret
	xxh3LastAcc    = xxh3SecretSize - xxh3Stripe - 7   // the last stripe's secret
	xxh3MergeAt    = 11                                // the merge's secret
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func mulFold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxh3Avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= xxh3Mx1
	return h ^ h>>32
}

func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= prime64x2
	h ^= h >> 29
	h *= prime64x3
	return h ^ h>>32
}

// mix16 is XXH3_mix16B: 16 bytes of input against 16 of the secret.
func mix16(b []byte, sec []byte, seed uint64) uint64 {
	return mulFold(le64(b)^(le64(sec)+seed), le64(b[8:])^(le64(sec[8:])-seed))
}

// xxh3Over16 hashes keys longer than 16 bytes.
func xxh3Over16(seed uint64, b []byte) uint64 {
	n := len(b)
	sec := xxh3Secret[:]
	acc := uint64(n) * prime64x1
	switch {
	case n <= 128:
		if n > 32 {
			if n > 64 {
				if n > 96 {
					acc += mix16(b[48:], sec[96:], seed)
					acc += mix16(b[n-64:], sec[112:], seed)
				}
				acc += mix16(b[32:], sec[64:], seed)
				acc += mix16(b[n-48:], sec[80:], seed)
			}
			acc += mix16(b[16:], sec[32:], seed)
			acc += mix16(b[n-32:], sec[48:], seed)
		}
		acc += mix16(b, sec, seed)
		acc += mix16(b[n-16:], sec[16:], seed)
		return xxh3Avalanche(acc)
	case n <= 240:
		for i := 0; i < 8; i++ {
			acc += mix16(b[16*i:], sec[16*i:], seed)
		}
		acc = xxh3Avalanche(acc)
		for i := 8; i < n/16; i++ {
			acc += mix16(b[16*i:], sec[16*(i-8)+3:], seed)
		}
		acc += mix16(b[n-16:], sec[xxh3MidLast:], seed)
		return xxh3Avalanche(acc)
	}
	return xxh3Long(seed, b)
}

// xxh3Long hashes keys longer than 240 bytes: stripes of 64 bytes into eight
// accumulators, with a secret derived from the seed.
func xxh3Long(seed uint64, b []byte) uint64 {
	var sec [xxh3SecretSize]byte
	for i := 0; i < xxh3SecretSize; i += 16 {
		binary.LittleEndian.PutUint64(sec[i:], le64(xxh3Secret[i:])+seed)
		binary.LittleEndian.PutUint64(sec[i+8:], le64(xxh3Secret[i+8:])-seed)
	}
	acc := [8]uint64{prime32x3, prime64x1, prime64x2, prime64x3, prime64x4, prime32x2, prime64x5, prime32x1}
	n := len(b)
	blocks := (n - 1) / xxh3Block
	for k := 0; k < blocks; k++ {
		block := b[k*xxh3Block:]
		for s := 0; s < xxh3Stripes; s++ {
			xxh3Accumulate(&acc, block[s*xxh3Stripe:], sec[s*8:])
		}
		xxh3Scramble(&acc, sec[xxh3SecretSize-xxh3Stripe:])
	}
	last := b[blocks*xxh3Block:]
	for s := 0; s < (n-1-blocks*xxh3Block)/xxh3Stripe; s++ {
		xxh3Accumulate(&acc, last[s*xxh3Stripe:], sec[s*8:])
	}
	xxh3Accumulate(&acc, b[n-xxh3Stripe:], sec[xxh3LastAcc:])
	h := uint64(n) * prime64x1
	for i := 0; i < 4; i++ {
		m := sec[xxh3MergeAt+16*i:]
		h += mulFold(acc[2*i]^le64(m), acc[2*i+1]^le64(m[8:]))
	}
	return xxh3Avalanche(h)
}

func xxh3Accumulate(acc *[8]uint64, in, sec []byte) {
	for i := 0; i < 8; i++ {
		v := le64(in[8*i:])
		k := v ^ le64(sec[8*i:])
		acc[i^1] += v
		acc[i] += uint64(uint32(k)) * (k >> 32)
	}
}

func xxh3Scramble(acc *[8]uint64, sec []byte) {
	for i := 0; i < 8; i++ {
		a := acc[i]
		a ^= a >> 47
		a ^= le64(sec[8*i:])
		acc[i] = a * prime32x1
	}
}

// stringBytes views a string's bytes without copying.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
