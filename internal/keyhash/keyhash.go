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
		return sum9(seed, n, le64(b), le64(b[n-8:]))
	}
	if n >= 4 {
		return sum4(seed, n, binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[n-4:]))
	}
	if n > 0 {
		return sum1(seed, n, b[0], b[n>>1], b[n-1])
	}
	return xxh64Avalanche(seed ^ xxh3Flip0)
}

// Sum2 returns Sum(seed, a+b) without joining a and b. Callers that hash a
// prefix and a name use it. A joined key would be stored and then loaded a
// word at a time, and a load of bytes just stored stalls.
//
// For a key of 9 to 240 bytes, Sum2 loads each word from a or from b. It puts
// a word that spans both together in registers. A part shorter than 8 bytes
// is read in smaller loads. A key of up to 8 bytes is put together in one
// word. A key over 240 bytes is joined first, as such keys are rare. Sum2
// allocates only for keys over 256 bytes.
//
// Keys of 17 to 32 bytes with at least 8 of them in b take a path without a
// call.
func Sum2(seed uint64, a, b string) uint64 {
	n := len(a) + len(b)
	if uint(n-17) >= 16 || len(b) < 8 {
		return sum2Split(seed, a, b)
	}
	// Sum's path for 17 to 32 bytes: the words at 0 and 8, and at n-16 and
	// n-8. ea holds a's last 8 bytes, or all of a in its high bytes when a
	// is shorter. eb holds b's first 8 bytes.
	eb := str64(b[:8])
	var ea, w0, w1, w2 uint64
	if len(a) >= 8 {
		w0, ea = str64(a[:8]), str64(a[len(a)-8:])
		switch {
		case len(a) >= 16:
			w1 = str64(a[8:16])
		case len(a) > 8:
			w1 = across(ea, eb, len(a)-8)
		default:
			w1 = eb
		}
	} else {
		s := leShort(stringBytes(a))
		w0, w1 = s|eb<<(uint(8*len(a))&63), str64(b[8-len(a):16-len(a)])
		ea = s << (uint(64-8*len(a)) & 63)
	}
	switch {
	case len(b) >= 16:
		w2 = str64(b[len(b)-16 : len(b)-8])
	case len(b) > 8:
		w2 = across(ea, eb, 16-len(b))
	default:
		w2 = ea
	}
	w3 := str64(b[len(b)-8:])
	sec := xxh3Secret[:]
	acc := uint64(n)*prime64x1 +
		mulFold(w0^(le64(sec)+seed), w1^(le64(sec[8:])-seed)) +
		mulFold(w2^(le64(sec[16:])+seed), w3^(le64(sec[24:])-seed))
	return xxh3Avalanche(acc)
}

// sum2Split is Sum2 for the keys that Sum2's own path leaves.
func sum2Split(seed uint64, a, b string) uint64 {
	if len(b) == 0 {
		return Sum(seed, a)
	}
	if len(a) == 0 {
		return Sum(seed, b)
	}
	n := len(a) + len(b)
	pa, pb := stringBytes(a), stringBytes(b)
	if n <= 8 {
		// Both parts are shorter than 8 bytes here.
		v := leShort(pa) | leShort(pb)<<(uint(8*len(a))&63)
		if n >= 4 {
			return sum4(seed, n, uint32(v), uint32(v>>(uint(8*(n-4))&63)))
		}
		return sum1(seed, n, byte(v), byte(v>>(uint(8*(n>>1))&63)), byte(v>>(uint(8*(n-1))&63)))
	}
	if n > 240 {
		return sumLong(seed, a, b)
	}
	// ea holds a's last 8 bytes, or all of a in its high bytes when a is
	// shorter. eb holds b's first 8 bytes, or all of b in its low bytes.
	var ea, eb uint64
	if len(a) >= 8 {
		ea = le64(pa[len(a)-8:])
	} else {
		ea = leShort(pa) << (uint(64-8*len(a)) & 63)
	}
	if len(b) >= 8 {
		eb = le64(pb)
	} else {
		eb = leShort(pb)
	}
	if n <= 16 {
		return sum9(seed, n, word(pa, pb, ea, eb, 0), word(pa, pb, ea, eb, n-8))
	}
	// xxh3Over16's reads, a pair of words at a time.
	sec := xxh3Secret[:]
	acc := uint64(n) * prime64x1
	if n <= 128 {
		if n > 32 {
			if n > 64 {
				if n > 96 {
					acc += mix16w(word(pa, pb, ea, eb, 48), word(pa, pb, ea, eb, 56), sec[96:], seed)
					acc += mix16w(word(pa, pb, ea, eb, n-64), word(pa, pb, ea, eb, n-56), sec[112:], seed)
				}
				acc += mix16w(word(pa, pb, ea, eb, 32), word(pa, pb, ea, eb, 40), sec[64:], seed)
				acc += mix16w(word(pa, pb, ea, eb, n-48), word(pa, pb, ea, eb, n-40), sec[80:], seed)
			}
			acc += mix16w(word(pa, pb, ea, eb, 16), word(pa, pb, ea, eb, 24), sec[32:], seed)
			acc += mix16w(word(pa, pb, ea, eb, n-32), word(pa, pb, ea, eb, n-24), sec[48:], seed)
		}
		acc += mix16w(word(pa, pb, ea, eb, 0), word(pa, pb, ea, eb, 8), sec, seed)
		acc += mix16w(word(pa, pb, ea, eb, n-16), word(pa, pb, ea, eb, n-8), sec[16:], seed)
		return xxh3Avalanche(acc)
	}
	for i := 0; i < 8; i++ {
		acc += mix16w(word(pa, pb, ea, eb, 16*i), word(pa, pb, ea, eb, 16*i+8), sec[16*i:], seed)
	}
	acc = xxh3Avalanche(acc)
	for i := 8; i < n/16; i++ {
		acc += mix16w(word(pa, pb, ea, eb, 16*i), word(pa, pb, ea, eb, 16*i+8), sec[16*(i-8)+3:], seed)
	}
	acc += mix16w(word(pa, pb, ea, eb, n-16), word(pa, pb, ea, eb, n-8), sec[xxh3MidLast:], seed)
	return xxh3Avalanche(acc)
}

// across is the word that takes its first k bytes from a and the rest from
// b, for k from 0 to 7. ea holds a's last bytes in its high bytes. eb holds
// b's first bytes in its low bytes.
func across(ea, eb uint64, k int) uint64 {
	return eb<<(uint(8*k)&63) | ea>>1>>(uint(63-8*k)&63)
}

// word is the 8 bytes at offset i of the key a+b, little-endian. ea and eb
// are as across takes them. The caller keeps i+8 within the key.
func word(a, b []byte, ea, eb uint64, i int) uint64 {
	if i+8 <= len(a) {
		return le64(a[i:])
	}
	if i >= len(a) {
		return le64(b[i-len(a):])
	}
	return across(ea, eb, len(a)-i)
}

// mix16w is XXH3_mix16B of 16 bytes given as two words.
func mix16w(lo, hi uint64, sec []byte, seed uint64) uint64 {
	return mulFold(lo^(le64(sec)+seed), hi^(le64(sec[8:])-seed))
}

// sum9 finishes a key of 9 to 16 bytes from its first and last 8 bytes.
func sum9(seed uint64, n int, first, last uint64) uint64 {
	lo := first ^ (xxh3Flip9 + seed)
	hi := last ^ (xxh3Flip9b - seed)
	return xxh3Avalanche(uint64(n) + bits.ReverseBytes64(lo) + hi + mulFold(lo, hi))
}

// sum4 finishes a key of 4 to 8 bytes from its first and last 4 bytes.
func sum4(seed uint64, n int, first, last uint32) uint64 {
	seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
	h := (uint64(last) + uint64(first)<<32) ^ (xxh3Flip4 - seed)
	h ^= bits.RotateLeft64(h, 49) ^ bits.RotateLeft64(h, 24)
	h *= xxh3Mx2
	h ^= h>>35 + uint64(n)
	h *= xxh3Mx2
	return h ^ h>>28
}

// sum1 finishes a key of 1 to 3 bytes from its first, middle and last byte.
func sum1(seed uint64, n int, first, mid, last byte) uint64 {
	c := uint32(first)<<16 | uint32(mid)<<24 | uint32(last) | uint32(n)<<8
	return xxh64Avalanche(uint64(c) ^ (xxh3Flip1 + seed))
}

// sumLong is Sum2 for keys over 240 bytes. It joins a and b on the stack
// when they fit in 256 bytes, and on the heap otherwise.
func sumLong(seed uint64, a, b string) uint64 {
	var buf [256]byte
	return xxh3Long(seed, append(append(buf[:0], a...), b...))
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

// str64 is the little-endian word of s's first 8 bytes. The compiler makes
// it one load.
func str64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// leShort is the little-endian word of fewer than 8 bytes, zero above them.
// Two loads that overlap read 4 to 7 bytes, and three read 1 to 3.
func leShort(b []byte) uint64 {
	n := len(b)
	if n >= 4 {
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(uint(8*(n-4))&63)
	}
	if n > 0 {
		return uint64(b[0]) | uint64(b[n>>1])<<(uint(8*(n>>1))&63) | uint64(b[n-1])<<(uint(8*(n-1))&63)
	}
	return 0
}

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
