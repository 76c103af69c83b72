package dict

import (
	"testing"
	"time"
	"unsafe"
)

// keyEntry returns key's shard and entry offset, failing the test when the
// key is absent.
func keyEntry(t *testing.T, d *Dict, key string) (*shard, uint32) {
	t.Helper()
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	off, err := s.findInShard(key, h)
	if err != nil || off == 0 {
		t.Fatalf("findInShard(%q) = %#x, %v", key, off, err)
	}
	return s, off
}

// TestPlainInt pins which entries Incr's common case adds to by itself
// (plainInt) and which it leaves to incrEntry: a change of the entry's
// layout or of what incrEntry checks must be made to both.
func TestPlainInt(t *testing.T) {
	d, c := openTest(t, Options{})
	specSet(t, d, "n", Int(5), 0, 0)
	specSet(t, d, "ttl", Int(7), time.Second, 0)
	specSet(t, d, "f", Float(1.5), 0, 0)
	specSet(t, d, "b", Bytes([]byte("12345678")), 0, 0)

	s, off := keyEntry(t, d, "n")
	e := s.entryAt(off)
	orig := e.bits()
	kind := orig & kindMask
	for _, tc := range []struct {
		name string
		bits uint8
		want bool
	}{
		{"used", kind | refBit, true},
		{"used, protected", kind | refBit | protBit, true},
		{"not used since the hand passed", kind, false},
		{"protected, not used", kind | protBit, false},
	} {
		e.setBits(tc.bits)
		p := d.plainInt(s, off, len("n"), incrToInt)
		if got := p != nil; got != tc.want {
			t.Errorf("%s: plainInt = %v, want a number %v", tc.name, p, tc.want)
		}
		if p != nil && (p != s.num(off, e) || *p != 5) {
			t.Errorf("%s: plainInt = %p holding %d, want %p holding 5", tc.name, p, *p, s.num(off, e))
		}
	}
	// incrEntry sets the ref bit that plainInt wants, and keeps protBit
	// (set back as the queue has it).
	e.setBits(orig &^ refBit)
	if n, err := d.Incr("n", 1); err != nil || n != 6 {
		t.Fatalf("Incr(n) = %d, %v, want 6", n, err)
	}
	if b := e.bits(); b != orig|refBit {
		t.Errorf("bits after Incr = %#x, want %#x", b, orig|refBit)
	}
	if d.plainInt(s, off, len("n"), incrToInt) == nil {
		t.Error("plainInt = nil after Incr set the ref bit")
	}

	// A half-written entry (odd Ver) is incrEntry's, which has it repaired.
	w := e.ver()
	e.Ver = w + verOne
	if p := d.plainInt(s, off, len("n"), incrToInt); p != nil {
		t.Error("plainInt of an entry in the middle of a write is not nil")
	}
	e.Ver = w

	// A TTL: live until its expiry, then incrEntry's, which counts a miss.
	s, off = keyEntry(t, d, "ttl")
	s.entryAt(off).use()
	if d.plainInt(s, off, len("ttl"), incrToInt) == nil {
		t.Error("plainInt of a live int with a TTL = nil")
	}
	c.Advance(time.Second)
	if p := d.plainInt(s, off, len("ttl"), incrToInt); p != nil {
		t.Error("plainInt of an expired int is not nil")
	}
	if _, err := d.Incr("ttl", 1); err != ErrNotFound {
		t.Errorf("Incr(expired) = %v, want ErrNotFound", err)
	}

	// Not an int.
	for _, key := range []string{"f", "b"} {
		s, off := keyEntry(t, d, key)
		s.entryAt(off).use()
		if p := d.plainInt(s, off, len(key), incrToInt); p != nil {
			t.Errorf("plainInt(%s) = %p, want nil", key, p)
		}
	}

	// A number whose 8 bytes would end past the arena is not one to add to.
	s, off = keyEntry(t, d, "n")
	arena := s.arena
	v := uintptr(unsafe.Pointer(s.num(off, s.entryAt(off)))) - uintptr(unsafe.Pointer(&arena[0]))
	s.arena = arena[:v+7]
	if p := d.plainInt(s, off, len("n"), incrToInt); p != nil {
		t.Error("plainInt of a number past the arena's end is not nil")
	}
	s.arena = arena
}
