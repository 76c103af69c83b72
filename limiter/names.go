package limiter

import (
	"fmt"
	"sync/atomic"

	"github.com/shmzone/shmzone/dict"
)

// Names. A limiter owns the keys of one namespace of its dictionary: the
// state of its key k lives under the zone key
//
//	kind|name|k
//
// where kind is the limiter's kind (below) and name the name it was built
// with. The zone key depends on nothing else, so every process of a host
// that builds a limiter of the same kind and name over the same zone shares
// its state, whatever its parameters (a new rate takes over the old state,
// as nginx's limit_req zone does on reload), and two limiters that differ in
// kind or name never read each other's state. A name holds no '|', so the
// zone key tells kind, name and key apart: no two of them share a zone key.
// Within one process, a limiter of a kind and name that a live one holds
// with other parameters is refused (clash.go).
//
// Two limiters of different kinds under one name are two limiters, each
// with its own state: a kind's state is of no use to another (a Count
// cannot read a Req's bucket), so sharing would only turn every decision of
// one of them into ErrAbused, as it does in lua-resty-limit-traffic. No
// zone-wide registry refuses the second name: it could not outlive an
// eviction, and it would refuse for ever a name whose limiter changed kind
// in a new release.
//
// The kinds; package redistier's Tiered keeps its host's counts under
// "tier|prefix|…", another kind of the same scheme.
const (
	kindReq        = "req"
	kindCount      = "count"
	kindConn       = "conn"
	kindLeasedConn = "lconn" // a leased Conn's records are not a plain Conn's int
	kindSW         = "sw"
	kindGCRA       = "gcra"
)

// MaxNameLen is the longest name of a limiter, in bytes.
const MaxNameLen = 64

// CheckName checks that name can name a limiter. A name has 1 to MaxNameLen
// bytes, none of them '|' or an ASCII control character. The constructors
// call it, and package redistier checks Tiered's prefix with it.
//
// CheckName returns nil for a good name, and an error wrapping ErrBadName
// for a bad one.
func CheckName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen {
		return fmt.Errorf("%w: %q is not 1 to %d bytes", ErrBadName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '|' || c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: %q holds %q", ErrBadName, name, c)
		}
	}
	return nil
}

// space is what every limiter of this package keeps besides its
// parameters: its namespace and its counts (full.go). It is embedded, so
// that Stats is every limiter's method.
type space struct {
	prefix string // "kind|name|"
	counts *counts
}

// newSpace returns the namespace of a limiter of kind named name. Errors:
// ErrBadName.
func newSpace(kind, name string) (space, error) {
	if err := CheckName(name); err != nil {
		return space{}, err
	}
	return space{prefix: kind + "|" + name + "|", counts: new(counts)}, nil
}

// keyBufSize is the longest zone key built without an allocation: the
// prefix (at most 6 + 1 + MaxNameLen + 1 bytes) and a key of 56 bytes, an
// IPv6 address with its zone and more.
const keyBufSize = 128

// keyBuf is where a decision builds a zone key, on its stack: neither the
// dictionary nor this package keeps a key it is given (errors copy it), so
// the buffer does not escape. Were it to, the compiler would move it to the
// heap, and alloc_test.go would fail.
type keyBuf [keyBufSize]byte

// key returns key's zone key, the prefix and key. When it fits in buf it is
// built there and aliases buf: the caller keeps buf alive and unchanged
// while it uses the result, and gives the result only to functions that
// keep no reference to it (the dictionary's; errors copy it). A longer one
// is allocated. The empty key stays empty, for the dictionary's
// ErrEmptyKey.
func (sp *space) key(buf *keyBuf, key string) string {
	if key == "" {
		return ""
	}
	n := len(sp.prefix) + len(key)
	if n > len(buf) {
		return sp.prefix + key
	}
	copy(buf[copy(buf[:], sp.prefix):], key)
	return bytesString(buf[:n])
}

// zoneKey is key for d as a dict.Key: the prefix and key, built in buf as
// key builds them, and hashed from the two where they lie (dict.KeyOf).
// The empty key stays the empty Key, for the dictionary's ErrEmptyKey.
func (sp *space) zoneKey(d *dict.Dict, buf *keyBuf, key string) dict.Key {
	if key == "" {
		return dict.Key{}
	}
	return d.KeyOf(buf[:], sp.prefix, key)
}

// counts are a limiter's Stats, shared by the limiter's goroutines.
type counts struct {
	forcible, retries, evicted atomic.Uint64
}
