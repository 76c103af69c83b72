package dict

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"sync/atomic"
)

// Kind is the type of a stored value.
type Kind uint8

// The kinds. KindNone is the zero Value's kind; it cannot be stored.
const (
	KindNone  Kind = 0
	KindBytes Kind = 1
	KindInt   Kind = 2
	KindFloat Kind = 3
	KindBool  Kind = 4
	KindList  Kind = 5 // a list; only the list operations read and write it
)

func (k Kind) String() string {
	switch k {
	case KindBytes:
		return "bytes"
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindList:
		return "list"
	}
	return "none"
}

// Value is a typed value: bytes, an int64, a float64 or a bool. The zero Value
// has KindNone and cannot be stored. Values are small and passed by value.
type Value struct {
	b    []byte // KindBytes; from String it views the string's bytes
	num  uint64 // int64 or float64 bits, or 0/1
	kind Kind
	str  bool // b views a string: never written, copied by Bytes
}

// Int returns an int value.
func Int(n int64) Value { return Value{kind: KindInt, num: uint64(n)} }

// Float returns a float value.
func Float(f float64) Value { return Value{kind: KindFloat, num: math.Float64bits(f)} }

// Bool returns a bool value.
func Bool(v bool) Value {
	if v {
		return Value{kind: KindBool, num: 1}
	}
	return Value{kind: KindBool}
}

// Bytes returns a bytes value that aliases b: b must not change until the
// value is stored.
func Bytes(b []byte) Value { return Value{kind: KindBytes, b: b} }

// String returns a bytes value holding s.
func String(s string) Value { return Value{kind: KindBytes, b: stringBytes(s), str: true} }

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// Int returns the value of an int, a float truncated toward zero, or 1/0 for a
// bool; 0 for bytes. A float that no int64 holds is clamped: one at or above
// 2^63 (+Inf included) is MaxInt64, one below -2^63 (-Inf included)
// MinInt64, and NaN 0.
func (v Value) Int() int64 {
	switch v.kind {
	case KindInt, KindBool:
		return int64(v.num)
	case KindFloat:
		return clampInt(math.Float64frombits(v.num))
	}
	return 0
}

// clampInt returns f truncated toward zero, clamped to int64's range, NaN
// as 0: Go's int64(f) of a float outside the range is platform-dependent.
func clampInt(f float64) int64 {
	switch {
	case fitsInt(f):
		return int64(f)
	case f > 0:
		return math.MaxInt64
	case f < 0:
		return math.MinInt64
	}
	return 0 // NaN
}

// fitsInt reports whether float f converts to an int64 exactly as
// truncation says: f is a number in [-2^63, 2^63). Go's int64(f) of any
// other f (NaN, an infinity, beyond) is platform-dependent: MinInt64 on
// amd64.
func fitsInt(f float64) bool { return f >= -0x1p63 && f < 0x1p63 }

// Float returns the value of a float or an int as a float64; 0 otherwise.
func (v Value) Float() float64 {
	switch v.kind {
	case KindFloat:
		return math.Float64frombits(v.num)
	case KindInt:
		return float64(int64(v.num))
	}
	return 0
}

// Bool returns the value of a bool. For another kind it reports whether the
// value is non-zero. A non-empty bytes value is true, and so is NaN. Zero,
// -0 and the zero Value are false.
func (v Value) Bool() bool {
	switch v.kind {
	case KindBytes:
		return v.Len() > 0
	case KindFloat:
		return v.Float() != 0
	}
	return v.num != 0
}

// Bytes returns the bytes of a bytes value. For a value from Get it is the
// caller's own copy; for one from String it is a new copy; for Update's cur
// it is a read-only view of the zone, valid only during fn. A view has no
// spare capacity: an append to it copies. For other kinds it is nil.
func (v Value) Bytes() []byte {
	if v.kind != KindBytes {
		return nil
	}
	if v.str {
		return append([]byte(nil), v.b...)
	}
	return v.b
}

// String returns the bytes of a bytes value as a string, and the decimal form
// of a number or "true"/"false" for a bool.
func (v Value) String() string {
	switch v.kind {
	case KindBytes:
		return string(v.b)
	case KindInt:
		return strconv.FormatInt(int64(v.num), 10)
	case KindFloat:
		return strconv.FormatFloat(math.Float64frombits(v.num), 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(v.num != 0)
	case KindList:
		return "(list)"
	}
	return ""
}

// Len returns the stored length of the value in bytes.
func (v Value) Len() int { return storedSize(v.kind, len(v.b)) }

// storedSize is Len of a value of kind k whose bytes, if any, are n long.
// The package's own code calls it with the two fields of a *Value rather
// than (*v).Len(), which copies the whole Value first: a copy whose wide
// loads the CPU cannot forward from the caller's narrower stores of the
// Value just built (DESIGN.md, section 4).
func storedSize(k Kind, n int) int {
	switch k {
	case KindBytes:
		return n
	case KindInt, KindFloat:
		return 8
	case KindBool:
		return 1
	}
	return 0
}

// Equal reports whether two values have the same kind and the same bytes (for
// floats, the same bits).
func (v Value) Equal(w Value) bool {
	if v.kind != w.kind {
		return false
	}
	if v.kind != KindBytes {
		return v.num == w.num
	}
	return bytes.Equal(v.b, w.b)
}

// current sets *v to the value of a live entry that passed okBytes and is
// not a list, for Update's fn: a bytes value aliases the zone, capped. It
// fills *v rather than return a Value: a returned Value, five words, is
// stored word by word and then copied in 16-byte moves, which wait for
// those stores.
func (s *shard) current(off uint32, e *entry, v *Value) {
	k := e.kind()
	if k != KindInt && k != KindFloat && k != KindBool {
		v.kind, v.b, v.num, v.str = KindBytes, s.valueOf(off, e), 0, false
		return
	}
	num, _ := s.scalarAt(k, int(off)+valOff(int(e.KLen)), int(e.VLen)) // a corrupt length reads as zero
	v.kind, v.b, v.num, v.str = k, nil, num, false
}

// putValue writes v's bytes into an entry whose VLen is already set; the
// caller holds the entry's page lock, or the shard's after draining it.
func (s *shard) putValue(off uint32, e *entry, v Value) {
	switch v.kind {
	case KindInt, KindFloat:
		*s.num(off, e) = v.num
	case KindBool:
		s.valueOf(off, e)[0] = byte(v.num)
	case KindBytes:
		copy(s.valueOf(off, e), v.b)
	case KindList:
		*s.listOf(off, e) = listHdr{}
	}
}

// storedLen returns the value bytes an entry of kind k holds for v.
func storedLen(v Value) int {
	if v.kind == KindList {
		return listHdrSize
	}
	return v.Len()
}

// Values in the zone. An entry holds its value after its key, 8-aligned: a
// number as a native word, a bool as one byte, bytes as they are, a list
// as a list header. A list node holds a number in 8 little-endian bytes,
// unaligned. The functions below are the only ones that encode or decode
// a value; the rest of the package asks them.

// fits reports whether n stored bytes are a whole value of kind k.
func fits(k Kind, n int) bool {
	switch k {
	case KindInt, KindFloat:
		return n == 8
	case KindBool:
		return n == 1
	case KindList:
		return n == listHdrSize
	}
	return k == KindBytes
}

// valueAt decodes the value of kind k held in the n bytes at vo of the
// arena, an entry's. It loads a number or a bool with sync/atomic, so a
// reader without a lock may call it and validate after. A bytes value is
// a capped view of the arena: the caller copies it, with loadBytes when it
// holds no lock. A list decodes to its kind alone. ok is false when n does
// not fit k, or vo+n lies outside the arena.
func (s *shard) valueAt(k Kind, vo, n int) (v Value, ok bool) {
	if !fits(k, n) || vo+n > len(s.arena) {
		return Value{}, false
	}
	switch k {
	case KindBytes:
		return Value{kind: k, b: s.arena[vo : vo+n : vo+n]}, true
	case KindList:
		return Value{kind: k}, true
	}
	num, _ := s.scalarAt(k, vo, n)
	return Value{kind: k, num: num}, true
}

// scalarAt loads the number or the bool of kind k held in the n bytes at vo
// of the arena, with sync/atomic. ok is false when n does not fit k, or k
// is another kind. The caller has checked that the value lies inside the
// arena. It is small enough to inline: Get's lock-free read calls it.
func (s *shard) scalarAt(k Kind, vo, n int) (num uint64, ok bool) {
	switch k {
	case KindInt, KindFloat:
		if n != 8 {
			return 0, false
		}
		return atomic.LoadUint64(s.numAt(vo)), true
	case KindBool:
		if n != 1 {
			return 0, false
		}
		return uint64(loadByte(s.arena, vo) & 1), true
	}
	return 0, false
}

// entryValue is valueAt for the entry at off, which passed okBytes.
func (s *shard) entryValue(off uint32, e *entry) (Value, bool) {
	return s.valueAt(e.kind(), int(off)+valOff(int(e.KLen)), int(e.VLen))
}

// nodeValue decodes a list node's data of kind k. A bytes value aliases
// data. ok is false when data does not fit k, or k is a list's.
func nodeValue(k Kind, data []byte) (v Value, ok bool) {
	if k == KindList || !fits(k, len(data)) {
		return Value{}, false
	}
	switch k {
	case KindInt, KindFloat:
		return Value{kind: k, num: binary.LittleEndian.Uint64(data)}, true
	case KindBool:
		return Bool(data[0] != 0), true
	}
	return Value{kind: k, b: data[:len(data):len(data)]}, true
}

// putNode writes v into a node's data, of v.Len() bytes.
func putNode(data []byte, v Value) {
	switch v.kind {
	case KindBytes:
		copy(data, v.b)
	case KindBool:
		data[0] = byte(v.num)
	default:
		binary.LittleEndian.PutUint64(data, v.num)
	}
}
