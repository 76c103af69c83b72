package dict

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests of Key (key.go): a Key names the entry its string names, joined in
// the buffer or not, made by this zone or another; the zero Key is the
// empty key; each Key operation does what its string operation does.

// keyShapes are prefixes and names of every length class of the hash,
// joined within a 64-byte buffer and beyond it.
func keyShapes() (prefixes, names []string) {
	for _, n := range []int{0, 1, 3, 6, 8, 9, 15, 16, 17, 31, 33, 64, 100, 130, 250} {
		prefixes = append(prefixes, strings.Repeat("p", n)[:max(n-1, 0)]+strings.Repeat("|", min(n, 1)))
		names = append(names, strings.Repeat("n", n))
	}
	return prefixes, names
}

func TestKeyOfIsTheJoinedKey(t *testing.T) {
	d, _ := openTest(t, Options{})
	var buf [64]byte
	prefixes, names := keyShapes()
	for _, p := range prefixes {
		for _, n := range names {
			k := d.KeyOf(buf[:], p, n)
			if k.String() != p+n {
				t.Fatalf("KeyOf(%q, %q).String() = %q", p, n, k.String())
			}
			if want := hashKey(d.seed, p+n); k.h != want || d.hashOf(k) != want {
				t.Fatalf("KeyOf(%q, %q) hash %#x, hashOf %#x, want %#x", p, n, k.h, d.hashOf(k), want)
			}
		}
	}
}

func TestKeyOperationsShareTheStringsEntry(t *testing.T) {
	d, _ := openTest(t, Options{Size: 4 << 20})
	var buf [64]byte
	prefixes, names := keyShapes()
	for _, p := range prefixes {
		for _, n := range names {
			key := p + n
			if key == "" || len(key) > 200 {
				continue
			}
			k := d.KeyOf(buf[:], p, n)
			sum, ttl, out, err := d.IncrInitNumTTLKey(k, -1, 10, time.Minute)
			if err != nil || sum != 9 || ttl != time.Minute || out != (Outcome{}) {
				t.Fatalf("IncrInitNumTTLKey(%q) = %v, %v, %+v, %v; want 9, 1m0s", key, sum, ttl, out, err)
			}
			if sum, _, _, err := d.IncrInitNumTTL(key, -1, 10, time.Minute); err != nil || sum != 8 {
				t.Fatalf("IncrInitNumTTL(%q) after the Key's = %v, %v; want 8", key, sum, err)
			}
			if sum, _, _, err := d.IncrInitNumTTLKey(k, -1, 10, time.Minute); err != nil || sum != 7 {
				t.Fatalf("IncrInitNumTTLKey(%q) after the string's = %v, %v; want 7", key, sum, err)
			}
			if _, err := d.ReviseIntKey(k, func(n int64, found bool) (int64, bool, time.Duration) {
				if !found || n != 7 {
					t.Errorf("ReviseIntKey(%q) fn got %d, %v; want 7, true", key, n, found)
				}
				return 70, true, 0
			}); err != nil {
				t.Fatalf("ReviseIntKey(%q) = %v", key, err)
			}
			wantGet(t, d, key, Int(70), 0)
			if err := d.Delete(key); err != nil {
				t.Fatal(err)
			}
			if _, err := d.ReviseKey(k, 16, incBoth); err != nil {
				t.Fatalf("ReviseKey(%q) = %v", key, err)
			}
			if _, err := d.Revise(key, 16, incBoth); err != nil {
				t.Fatalf("Revise(%q) = %v", key, err)
			}
			wantGet(t, d, key, Bytes(bytesOf(pair(2, 2), 16)), 0)
			if st := d.Stats(); st.Entries != 1 {
				t.Fatalf("after the ops on %q: %d entries, want 1", key, st.Entries)
			}
			if err := d.Delete(key); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A Key that another zone made is hashed again: its seed is another.
func TestKeyOfAnotherZone(t *testing.T) {
	d, _ := openTest(t, Options{})
	other, _ := openTest(t, Options{})
	if d.seed == other.seed {
		t.Fatalf("two zones with seed %#x", d.seed)
	}
	k := other.KeyOf(nil, "req|t|", "10.0.0.1")
	if _, _, _, err := d.IncrInitNumTTLKey(k, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	wantGet(t, d, "req|t|10.0.0.1", Int(1), 0)
	if _, _, err := other.Get("req|t|10.0.0.1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the other zone's Get = %v, want ErrNotFound", err)
	}
}

func TestKeyZeroIsEmpty(t *testing.T) {
	d, _ := openTest(t, Options{})
	var k Key
	if _, _, _, err := d.IncrInitNumTTLKey(k, 1, 0, 0); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("IncrInitNumTTLKey(Key{}) = %v, want ErrEmptyKey", err)
	}
	if _, err := d.ReviseKey(k, 16, incBoth); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("ReviseKey(Key{}) = %v, want ErrEmptyKey", err)
	}
	noInt := func(int64, bool) (int64, bool, time.Duration) { return 1, true, 0 }
	if _, err := d.ReviseIntKey(k, noInt); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("ReviseIntKey(Key{}) = %v, want ErrEmptyKey", err)
	}
	if _, err := d.ReviseKey(d.KeyOf(nil, "a", "b"), 12, incBoth); !errors.Is(err, ErrBadValue) {
		t.Errorf("ReviseKey of 12 bytes = %v, want ErrBadValue", err)
	}
	if st := d.Stats(); st.Entries != 0 {
		t.Errorf("%d entries, want 0", st.Entries)
	}
}
