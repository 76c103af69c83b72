package headers

import (
	"net/textproto"
	"strconv"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// Field is one of the rate limit headers.
type Field uint8

// The fields, in the order Append writes them.
const (
	FieldPolicy     Field = iota // RateLimit-Policy
	FieldLimit                   // X-RateLimit-Limit
	FieldRateLimit               // RateLimit
	FieldRemaining               // X-RateLimit-Remaining
	FieldReset                   // X-RateLimit-Reset
	FieldRetryAfter              // Retry-After
	numFields
)

// specNames are the names as the specifications spell them.
var specNames = [numFields]string{Policy, Limit, RateLimit, Remaining, Reset, RetryAfter}

// fieldNames are the names in canonical form, as net/http's Header keys
// them and fasthttp normalises them: "X-Ratelimit-Limit".
var fieldNames = func() (n [numFields]string) {
	for i, name := range specNames {
		n[i] = textproto.CanonicalMIMEHeaderKey(name)
	}
	return n
}()

// fieldBytes are fieldNames as bytes, each capped so that an append copies.
var fieldBytes = func() (b [numFields][]byte) {
	for i, n := range fieldNames {
		b[i] = []byte(n)[:len(n):len(n)]
	}
	return b
}()

// Name returns the field's header name in canonical form, the key of an
// http.Header.
func (f Field) Name() string { return fieldNames[f] }

// NameBytes returns the field's header name as bytes, in canonical form,
// for setters that take bytes (fasthttp's SetCanonical). The slice is
// shared: the caller must not change it.
func (f Field) NameBytes() []byte { return fieldBytes[f] }

// Fields are the header fields of one decision, with their values. Fields
// hold the values of the decision's numbers in a buffer of their own, so
// that building them allocates nothing. The Writer holds the constant
// ones. The zero Fields is empty.
type Fields struct {
	w     *Writer // the Writer of the constant values, Policy's and Limit's
	long  []byte  // the values, once they outgrew buf; else nil
	n     uint8
	f     [numFields]Field
	start [numFields]uint32 // where each value starts, in buf or long
	end   [numFields]uint32
	used  uint32
	buf   [fieldsBuf]byte
}

// fieldsBuf is the room Fields keep for their values: a decision's numbers
// and a policy name of up to 30 bytes.
const fieldsBuf = 96

// Len returns the number of fields.
func (fs *Fields) Len() int { return int(fs.n) }

// Reset empties fs, and keeps the room it took.
func (fs *Fields) Reset() {
	fs.w, fs.n, fs.used = nil, 0, 0
	if fs.long != nil {
		fs.long = fs.long[:0]
	}
}

// At returns field i and its value, for i in [0, Len()). The value lives in
// fs or in the Writer, and must not be changed.
func (fs *Fields) At(i int) (Field, []byte) {
	switch f := fs.f[i]; f {
	case FieldPolicy:
		return f, fs.w.policy
	case FieldLimit:
		return f, fs.w.limit
	}
	b := fs.buf[:]
	if fs.long != nil {
		b = fs.long
	}
	return fs.f[i], b[fs.start[i]:fs.end[i]:fs.end[i]]
}

// add adds field f with a copy of v. Once the values outgrow fs.buf, they
// move to a slice of their own. fs keeps no part of v: a caller builds it
// on its stack.
func (fs *Fields) add(f Field, v []byte) {
	start := fs.used
	if fs.long == nil && int(start)+len(v) > fieldsBuf {
		fs.long = append(make([]byte, 0, 2*(int(start)+len(v))), fs.buf[:start]...)
	}
	if fs.long != nil {
		fs.long = append(fs.long[:start], v...)
	} else {
		copy(fs.buf[start:], v)
	}
	fs.used += uint32(len(v))
	fs.f[fs.n], fs.start[fs.n], fs.end[fs.n] = f, start, fs.used
	fs.n++
}

// AppendRetryAfter adds Retry-After, RetryAfterValue(d).
func (fs *Fields) AppendRetryAfter(d limiter.Decision) {
	var b [20]byte
	fs.add(FieldRetryAfter, strconv.AppendInt(b[:0], max(ceilSeconds(d.RetryAfter), 1), 10))
}

// Append adds the headers of decision d to fs, as Write sets them. reset
// is how long until the window resets. Append allocates nothing but for a
// policy name longer than 30 bytes.
func (w *Writer) Append(fs *Fields, d limiter.Decision, reset time.Duration) {
	fs.w = w
	if w.policy != nil {
		fs.f[fs.n], fs.f[fs.n+1] = FieldPolicy, FieldLimit
		fs.n += 2
	}
	// Each number is formatted once, into RateLimit's value, and the
	// fields of their own copy it from there.
	var b [fieldsBuf]byte
	v := append(b[:0], w.quoted...)
	v = append(v, ";r="...)
	r := len(v)
	v = strconv.AppendInt(v, d.Remaining, 10)
	remaining := v[r:]
	next := reset // until more quota: the reset, or the retry when rejected
	if !d.Allowed && d.RetryAfter > 0 {
		next = d.RetryAfter
	}
	var t []byte
	if next > 0 {
		v = append(v, ";t="...)
		r = len(v)
		v = strconv.AppendInt(v, ceilSeconds(next), 10)
		t = v[r:]
	}
	fs.add(FieldRateLimit, v)
	fs.add(FieldRemaining, remaining)
	if next != reset || next <= 0 {
		var rb [20]byte
		t = strconv.AppendInt(rb[:0], ceilSeconds(reset), 10)
	}
	fs.add(FieldReset, t)
}
