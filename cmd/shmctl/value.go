package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shmzone/shmzone/dict"
)

// Values on the command line and in output. On the command line a value is
// text read as its kind (--kind bytes|int|float|bool; bytes may be given in
// base64). For people a bytes value is quoted in Go syntax, so that every
// byte shows and none is a terminal control code; numbers and bools are bare.
// In JSON every value carries its kind; bytes that are not UTF-8 go in
// value_b64, and floats that JSON cannot hold (NaN, ±Inf) are strings.

// kinds are the kinds a value on the command line may have.
var kinds = map[string]dict.Kind{
	"bytes": dict.KindBytes, "int": dict.KindInt, "float": dict.KindFloat, "bool": dict.KindBool,
}

// parseValue reads a command-line value of the named kind; b64 says that a
// bytes value is given in base64.
func parseValue(kind, text string, b64 bool) (dict.Value, error) {
	k, ok := kinds[kind]
	if !ok {
		return dict.Value{}, usagef("bad kind %q: want bytes, int, float or bool", kind)
	}
	if b64 && k != dict.KindBytes {
		return dict.Value{}, usagef("--base64 is for bytes values, not %s", kind)
	}
	v, err := valueOfText(k, text, b64)
	if err != nil {
		return dict.Value{}, usagef("bad %s value %q", kind, text)
	}
	return v, nil
}

// valueOfText reads a value of kind k from its text form.
func valueOfText(k dict.Kind, text string, b64 bool) (dict.Value, error) {
	switch k {
	case dict.KindBytes:
		if b64 {
			b, err := base64.StdEncoding.DecodeString(text)
			return dict.Bytes(b), err
		}
		return dict.String(text), nil
	case dict.KindInt:
		n, err := strconv.ParseInt(text, 10, 64)
		return dict.Int(n), err
	case dict.KindFloat:
		f, err := strconv.ParseFloat(text, 64)
		return dict.Float(f), err
	case dict.KindBool:
		b, err := strconv.ParseBool(text)
		return dict.Bool(b), err
	}
	return dict.Value{}, fmt.Errorf("kind %v has no text form", k)
}

// human formats a value for people: bytes quoted, others bare.
func human(v dict.Value) string {
	if v.Kind() == dict.KindBytes {
		return strconv.Quote(v.String())
	}
	return v.String()
}

// humanList formats a list's elements for people, each with its kind.
func humanList(vs []dict.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Kind().String() + " " + human(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// humanKey formats a key for people: as it is when it is printable text
// that cannot be mistaken for a quoted one, quoted otherwise.
func humanKey(k string) string {
	if k == "" || strings.HasPrefix(k, `"`) || !utf8.ValidString(k) {
		return strconv.Quote(k)
	}
	for _, r := range k {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return strconv.Quote(k)
		}
	}
	return k
}

// shortKey formats a key for a message: as humanKey does when it is at most
// 64 bytes long, else its first 64 bytes or less (cut between two
// characters), "…" and its length.
func shortKey(k string) string {
	const most = 64
	if len(k) <= most {
		return humanKey(k)
	}
	i := most
	for i > 0 && !utf8.RuneStart(k[i]) {
		i--
	}
	return fmt.Sprintf("%s… (%d bytes)", humanKey(k[:i]), len(k))
}

// humanTTL formats a TTL for people: "never" for 0.
func humanTTL(ttl time.Duration) string {
	if ttl == 0 {
		return "never"
	}
	return ttl.String()
}

// jsonValue is a value in JSON: its kind, and the value in value, or in
// value_b64 for bytes that are not UTF-8. A list's value is an array of
// jsonValues.
type jsonValue struct {
	Kind     string          `json:"kind"`
	Value    json.RawMessage `json:"value,omitempty"`
	ValueB64 string          `json:"value_b64,omitempty"`
}

// jsonKey is a key in JSON: in key, or in key_b64 when it is not UTF-8.
type jsonKey struct {
	Key    string `json:"key,omitempty"`
	KeyB64 string `json:"key_b64,omitempty"`
}

func newJSONKey(k string) jsonKey {
	var j jsonKey
	j.Key, j.KeyB64 = textOrB64(k)
	return j
}

// textOrB64 returns s for a JSON string when it is UTF-8, else its base64
// for a *_b64 field: the other is "".
func textOrB64(s string) (text, b64 string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return "", base64.StdEncoding.EncodeToString([]byte(s))
}

func (j jsonKey) key() (string, error) {
	if j.KeyB64 != "" {
		k, err := base64.StdEncoding.DecodeString(j.KeyB64)
		if err != nil {
			return "", fmt.Errorf("key_b64: %v", err)
		}
		return string(k), nil
	}
	if j.Key == "" {
		return "", fmt.Errorf("no key")
	}
	return j.Key, nil
}

// jsonItem is a key in JSON (get, keys and dump): the key, its value unless
// only keys are listed, its flags, and its TTL in milliseconds (0: never
// expires).
type jsonItem struct {
	jsonKey
	jsonValue
	Flags uint32 `json:"flags"`
	TTLMs int64  `json:"ttl_ms"`
}

// jsonTTL is a key's TTL in JSON (ttl).
type jsonTTL struct {
	jsonKey
	TTLMs int64 `json:"ttl_ms"`
}

// item is a key's contents, as get, keys and dump show them.
type item struct {
	key    string
	value  dict.Value   // the value of a key that is no list
	list   []dict.Value // the elements of a list
	isList bool
	flags  uint32
	ttl    time.Duration // time left; 0 = never expires
}

// itemOf converts what Dict.Scan reports.
func itemOf(it dict.Item) item {
	return item{
		key: it.Key, value: it.Value, list: it.List, isList: it.Value.Kind() == dict.KindList,
		flags: it.Flags, ttl: it.TTL,
	}
}

func (it item) kind() string {
	if it.isList {
		return "list"
	}
	return it.value.Kind().String()
}

// human formats the item's value for people, with its kind.
func (it item) human() string {
	if it.isList {
		return fmt.Sprintf("list %s", humanList(it.list))
	}
	return it.kind() + " " + human(it.value)
}

// json describes the item in JSON; with withValue false, all but its value.
func (it item) json(withValue bool) jsonItem {
	j := jsonItem{jsonKey: newJSONKey(it.key), Flags: it.flags, TTLMs: it.ttl.Milliseconds()}
	j.jsonValue = jsonValue{Kind: it.kind()}
	if withValue && it.isList {
		elems := make([]jsonValue, len(it.list))
		for i, e := range it.list {
			elems[i] = toJSON(e)
		}
		j.Value = mustJSON(elems)
	} else if withValue {
		j.jsonValue = toJSON(it.value)
	}
	return j
}

// toJSON encodes a value that is no list.
func toJSON(v dict.Value) jsonValue {
	j := jsonValue{Kind: v.Kind().String()}
	switch v.Kind() {
	case dict.KindBytes:
		if b := v.Bytes(); utf8.Valid(b) {
			j.Value = mustJSON(string(b))
		} else {
			j.ValueB64 = base64.StdEncoding.EncodeToString(b)
		}
	case dict.KindFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			j.Value = mustJSON(v.String())
		} else {
			j.Value = json.RawMessage(v.String())
		}
	default: // int, bool: their text is their JSON
		j.Value = json.RawMessage(v.String())
	}
	return j
}

// maxTTLMs is the longest TTL in JSON, about 292 years: the most whole
// milliseconds a time.Duration holds with a millisecond to spare, so that
// neither the conversion nor rounding a TTL up to whole milliseconds wraps.
const maxTTLMs = int64((math.MaxInt64 - time.Millisecond) / time.Millisecond)

// item decodes what item.json encoded, with its value.
func (j jsonItem) item() (item, error) {
	it := item{flags: j.Flags}
	var err error
	if it.key, err = j.key(); err != nil {
		return it, err
	}
	if j.TTLMs < 0 || j.TTLMs > maxTTLMs {
		return it, fmt.Errorf("ttl_ms %d out of range: want 0 (never) to %d", j.TTLMs, maxTTLMs)
	}
	it.ttl = time.Duration(j.TTLMs) * time.Millisecond
	if j.Kind != "list" {
		v, err := fromJSON(j.jsonValue)
		it.value = v
		return it, err
	}
	if len(j.Value) == 0 {
		return it, fmt.Errorf("list value missing: want at least one element")
	}
	var elems []jsonValue
	if err := json.Unmarshal(j.Value, &elems); err != nil {
		return it, fmt.Errorf("list value: %v", err)
	}
	if len(elems) == 0 { // null or []: dump writes no empty list, and SetList of none deletes the key
		return it, fmt.Errorf("list value %s: want at least one element", j.Value)
	}
	it.isList = true
	it.list = make([]dict.Value, len(elems))
	for i, e := range elems {
		v, err := fromJSON(e)
		if err != nil {
			return it, fmt.Errorf("list element %d: %v", i, err)
		}
		it.list[i] = v
	}
	return it, nil
}

// fromJSON decodes a value that toJSON encoded.
func fromJSON(j jsonValue) (dict.Value, error) {
	k, ok := kinds[j.Kind]
	if !ok {
		return dict.Value{}, fmt.Errorf("bad kind %q", j.Kind)
	}
	if j.ValueB64 != "" {
		if k != dict.KindBytes {
			return dict.Value{}, fmt.Errorf("value_b64 for a %s", j.Kind)
		}
		return valueOfText(k, j.ValueB64, true)
	}
	if len(j.Value) == 0 || string(j.Value) == "null" { // bytes null would decode as the text "null"
		return dict.Value{}, fmt.Errorf("%s value null or missing", j.Kind)
	}
	text := string(j.Value)
	if k == dict.KindBytes || k == dict.KindFloat && strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(j.Value, &text); err != nil {
			return dict.Value{}, fmt.Errorf("%s value: %v", j.Kind, err)
		}
	}
	v, err := valueOfText(k, text, false)
	if err != nil {
		return dict.Value{}, fmt.Errorf("bad %s value %s", j.Kind, j.Value)
	}
	return v, nil
}

// mustJSON encodes what cannot fail to encode: strings and jsonValues.
func mustJSON(x any) json.RawMessage {
	var b bytes.Buffer
	if err := writeJSON(&b, x, false); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// writeJSON writes x as JSON and a newline: indented for a document, on one
// line for a line of a stream. "<", ">" and "&" stay as they are.
func writeJSON(w io.Writer, x any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(x)
}
