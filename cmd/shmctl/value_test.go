package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// TestJSONRoundTrip encodes items as dump does and decodes them as restore
// does: kinds, bytes, numbers at their edges and flags come back exactly.
func TestJSONRoundTrip(t *testing.T) {
	items := []item{
		{key: "s", value: dict.String("plain <&> \u2028 ☃"), flags: 1, ttl: 1500 * time.Millisecond},
		{key: "empty", value: dict.String("")},
		{key: "bin", value: dict.Bytes([]byte{0, 0xff, 0xc3, 0x28, '\n'})},
		{key: "\xff key", value: dict.Int(1)},
		{key: "max", value: dict.Int(math.MaxInt64), flags: math.MaxUint32},
		{key: "min", value: dict.Int(math.MinInt64)},
		{key: "f", value: dict.Float(0.1)},
		{key: "tiny", value: dict.Float(math.SmallestNonzeroFloat64)},
		{key: "huge", value: dict.Float(math.MaxFloat64)},
		{key: "-0", value: dict.Float(math.Copysign(0, -1))},
		{key: "nan", value: dict.Float(math.NaN())},
		{key: "inf", value: dict.Float(math.Inf(1))},
		{key: "-inf", value: dict.Float(math.Inf(-1))},
		{key: "t", value: dict.Bool(true)},
		{key: "l", isList: true, list: []dict.Value{dict.Int(-1), dict.Bytes([]byte{0xfe}), dict.Float(math.NaN()), dict.Bool(false)}},
	}
	for _, it := range items {
		var b bytes.Buffer
		if err := writeJSON(&b, it.json(true), false); err != nil {
			t.Fatalf("%q: %v", it.key, err)
		}
		var j jsonItem
		if err := json.Unmarshal(b.Bytes(), &j); err != nil {
			t.Fatalf("%q: %s does not decode: %v", it.key, b.Bytes(), err)
		}
		got, err := j.item()
		if err != nil {
			t.Fatalf("%q: %s: %v", it.key, b.Bytes(), err)
		}
		if got.key != it.key || got.flags != it.flags || got.ttl != it.ttl || got.isList != it.isList ||
			!sameValue(got.value, it.value) || len(got.list) != len(it.list) {
			t.Errorf("%s decodes as %+v, want %+v", b.Bytes(), got, it)
			continue
		}
		for i := range it.list {
			if !sameValue(got.list[i], it.list[i]) {
				t.Errorf("%s: element %d = %v, want %v", b.Bytes(), i, got.list[i], it.list[i])
			}
		}
	}
}

// sameValue is Value.Equal, but NaN equals NaN.
func sameValue(a, b dict.Value) bool {
	if a.Kind() == dict.KindFloat && b.Kind() == dict.KindFloat && math.IsNaN(a.Float()) {
		return math.IsNaN(b.Float())
	}
	return a.Equal(b)
}

func TestHumanKey(t *testing.T) {
	tests := []struct{ key, want string }{
		{"plain", "plain"},
		{"ünïcode:☃", "ünïcode:☃"},
		{"two words", `"two words"`},
		{`"quoted"`, `"\"quoted\""`},
		{"tab\t", `"tab\t"`},
		{"esc\x1b[2J", `"esc\x1b[2J"`},
		{"\xff", `"\xff"`},
		{"", `""`},
	}
	for _, tt := range tests {
		if got := humanKey(tt.key); got != tt.want {
			t.Errorf("humanKey(%q) = %s, want %s", tt.key, got, tt.want)
		}
	}
}
