package headers

import (
	"bytes"
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
// hold their values, but for the Writer's constant parts and a value too
// long to fit: a Fields copied is a whole copy, and the values of the
// decision's numbers take no allocation. The zero Fields is empty.
type Fields struct {
	n    int
	f    [numFields]Field
	ext  [numFields][]byte // a value outside buf, or nil
	end  [numFields]uint8  // the end in buf of a value in it
	used uint8             // the bytes of buf in use
	buf  [fieldsBuf]byte
}

// fieldsBuf is the room Fields keep for their values: a decision's numbers
// and a policy name of up to 40 bytes.
const fieldsBuf = 104

// Len returns the number of fields.
func (fs *Fields) Len() int { return fs.n }

// At returns field i and its value, for i in [0, Len()). The value lives in
// fs or in the Writer, and must not be changed.
func (fs *Fields) At(i int) (Field, []byte) {
	if v := fs.ext[i]; v != nil {
		return fs.f[i], v
	}
	start := uint8(0)
	if i > 0 {
		start = fs.end[i-1]
	}
	return fs.f[i], fs.buf[start:fs.end[i]:fs.end[i]]
}

// add adds field f with value v: a copy in fs.buf when it fits, or else
// a copy of its own. The Writer's constants go in as they are (addConst).
// Neither keeps v: a caller builds it on its stack.
func (fs *Fields) add(f Field, v []byte) {
	fs.f[fs.n] = f
	if len(v) <= fieldsBuf-int(fs.used) {
		fs.used += uint8(copy(fs.buf[fs.used:], v))
	} else {
		fs.ext[fs.n] = bytes.Clone(v)
	}
	fs.end[fs.n] = fs.used
	fs.n++
}

// addConst adds field f with v, a value of the Writer's that never
// changes.
func (fs *Fields) addConst(f Field, v []byte) {
	fs.f[fs.n], fs.ext[fs.n], fs.end[fs.n] = f, v, fs.used
	fs.n++
}

// AppendRetryAfter adds Retry-After, RetryAfterValue(d).
func (fs *Fields) AppendRetryAfter(d limiter.Decision) {
	var b [20]byte
	fs.add(FieldRetryAfter, strconv.AppendInt(b[:0], max(ceilSeconds(d.RetryAfter), 1), 10))
}

// Append adds the headers of decision d to fs, as Write sets them. reset
// is how long until the window resets. Append allocates nothing but for a
// policy name longer than 40 bytes.
func (w *Writer) Append(fs *Fields, d limiter.Decision, reset time.Duration) {
	if w.policy != nil {
		fs.addConst(FieldPolicy, w.policy)
		fs.addConst(FieldLimit, w.limit)
	}
	var b [fieldsBuf]byte
	v := append(b[:0], w.quoted...)
	v = append(v, ";r="...)
	v = strconv.AppendInt(v, d.Remaining, 10)
	next := reset // until more quota: the reset, or the retry when rejected
	if !d.Allowed && d.RetryAfter > 0 {
		next = d.RetryAfter
	}
	if next > 0 {
		v = append(v, ";t="...)
		v = strconv.AppendInt(v, ceilSeconds(next), 10)
	}
	fs.add(FieldRateLimit, v)
	fs.add(FieldRemaining, strconv.AppendInt(b[:0], d.Remaining, 10))
	fs.add(FieldReset, strconv.AppendInt(b[:0], ceilSeconds(reset), 10))
}
