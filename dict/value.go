package dict

import (
	"bytes"
	"math"
	"strconv"
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

// Bool returns the value of a bool; for other kinds, whether it is non-zero:
// a non-empty bytes value, an int other than 0, a float other than 0 and
// -0 (NaN is non-zero: true). The zero Value is false.
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

// current returns the value of a live entry that passed okBytes and is not
// a list, for Update's fn: a bytes value aliases the zone, capped.
func (s *shard) current(off uint32, e *entry) Value {
	switch k := e.kind(); k {
	case KindInt, KindFloat:
		v := Value{kind: k, num: math.Float64bits(0)}
		if e.VLen == 8 {
			v.num = *s.num(off, e)
		}
		return v
	case KindBool:
		return Bool(e.VLen == 1 && s.valueOf(off, e)[0] != 0)
	}
	return Value{kind: KindBytes, b: s.valueOf(off, e)}
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
