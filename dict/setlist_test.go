package dict

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// wantList fails unless LRange(key) returns want.
func wantList(t *testing.T, d *Dict, key string, want []Value) {
	t.Helper()
	got, err := d.LRange(key)
	if err != nil || len(got) != len(want) {
		t.Fatalf("LRange(%q) = %d elements, %v; want %d, <nil>", key, len(got), err, len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("LRange(%q)[%d] = %s %v, want %s %v", key, i, got[i].Kind(), short(got[i].String()), want[i].Kind(), short(want[i].String()))
		}
	}
}

func TestSetList(t *testing.T) {
	d, c := openTest(t, Options{Shards: 1})
	elems := []Value{Int(1), String("two"), Float(3.5), Bool(true), Bytes(bytes.Repeat([]byte{7}, 3000))}

	// Absent, a value, and a list are each replaced.
	specSet(t, d, "v", String("old"), 0, 9)
	for _, k := range []string{"absent", "v"} {
		if err := d.SetList(k, elems, 0); err != nil {
			t.Fatalf("SetList(%q, %d elements) = %v", k, len(elems), err)
		}
		wantList(t, d, k, elems)
	}
	if _, err := d.RPush("l", String("old")); err != nil {
		t.Fatal(err)
	}
	if err := d.SetList("l", elems[:2], time.Minute); err != nil {
		t.Fatalf("SetList over a list = %v", err)
	}
	wantList(t, d, "l", elems[:2])
	if ttl, err := d.TTL("l"); ttl != time.Minute || err != nil {
		t.Fatalf("TTL(\"l\") = %v, %v; want 1m", ttl, err)
	}
	if n, err := d.LLen("l"); n != 2 || err != nil {
		t.Fatalf("LLen(\"l\") = %d, %v; want 2", n, err)
	}
	// The list works as one LPush built: pop, push.
	if v, err := d.RPop("l"); err != nil || !v.Equal(elems[1]) {
		t.Fatalf("RPop(\"l\") = %v, %v; want %v", v, err, elems[1])
	}
	if _, err := d.LPush("l", Int(0)); err != nil {
		t.Fatal(err)
	}
	wantList(t, d, "l", []Value{Int(0), elems[0]})
	specCheck(t, d)

	// No elements deletes the key.
	if err := d.SetList("v", nil, 0); err != nil {
		t.Fatalf("SetList(\"v\", nil) = %v", err)
	}
	wantGetErr(t, d, "v", ErrNotFound)
	if err := d.SetList("never", nil, 0); err != nil {
		t.Fatalf("SetList of nothing on an absent key = %v", err)
	}

	// Bad arguments change nothing.
	for _, tt := range []struct {
		elems []Value
		ttl   time.Duration
		want  error
	}{
		{[]Value{Int(1), {}}, 0, ErrBadValue},
		{[]Value{{kind: KindList}}, 0, ErrBadValue},
		{[]Value{Bytes(make([]byte, d.maxEntry))}, 0, ErrValueTooLarge},
		{[]Value{Int(1)}, -time.Second, ErrBadTTL},
	} {
		if err := d.SetList("l", tt.elems, tt.ttl); !errors.Is(err, tt.want) {
			t.Fatalf("SetList(\"l\", %v, %v) = %v, want %v", tt.elems, tt.ttl, err, tt.want)
		}
		wantList(t, d, "l", []Value{Int(0), elems[0]})
	}

	// An expired list counts as absent; the TTL runs from now.
	c.Advance(2 * time.Minute)
	if n, _ := d.LLen("l"); n != 0 {
		t.Fatalf("LLen of an expired list = %d", n)
	}
	if err := d.SetList("l", elems[2:3], 0); err != nil {
		t.Fatal(err)
	}
	wantList(t, d, "l", elems[2:3])
}

// A list that does not fit leaves the old value, list or not, as it was:
// no element of the new list, no memory lost, and no other key evicted. Every
// length is tried, so the list runs out of memory at each of its elements
// and, when only its entry does not fit, after all of them.
func TestSetListNoMemoryKeepsOldValue(t *testing.T) {
	old := []Value{String("a"), Int(2), Bytes(bytes.Repeat([]byte{3}, 900))}
	for _, tt := range []struct {
		name string
		set  func(t *testing.T, d *Dict)
		want func(t *testing.T, d *Dict)
	}{
		{"old list", func(t *testing.T, d *Dict) {
			for _, v := range old {
				if _, err := d.RPush("k", v); err != nil {
					t.Fatal(err)
				}
			}
		}, func(t *testing.T, d *Dict) { wantList(t, d, "k", old) }},
		{"old value", func(t *testing.T, d *Dict) { specSet(t, d, "k", String("old value"), 0, 5) },
			func(t *testing.T, d *Dict) { wantGet(t, d, "k", String("old value"), 5) }},
		{"absent", func(t *testing.T, d *Dict) {}, func(t *testing.T, d *Dict) { wantGetErr(t, d, "k", ErrNotFound) }},
	} {
		for _, size := range []int{40, 1000, 4000} {
			t.Run(fmt.Sprintf("%s/elem=%d", tt.name, size), func(t *testing.T) {
				d, _ := openTest(t, Options{Size: specMinZone, Shards: 1})
				others := map[string]Value{}
				for i := 0; i < 20; i++ {
					k := fmt.Sprintf("other%d", i)
					others[k] = String(k)
					specSet(t, d, k, others[k], 0, 0)
				}
				tt.set(t, d)
				free := d.FreeSpace()
				var elems []Value
				for n := 1; ; n++ {
					elems = append(elems, Bytes(bytes.Repeat([]byte{byte(n)}, size)))
					err := d.SetList("k", elems, 0)
					if err == nil {
						wantList(t, d, "k", elems)
						specCheck(t, d)
						if err := d.Delete("k"); err != nil {
							t.Fatal(err)
						}
						tt.set(t, d)
						continue
					}
					if !errors.Is(err, ErrNoMemory) {
						t.Fatalf("SetList(\"k\", %d × %d bytes) = %v, want <nil> or ErrNoMemory", n, size, err)
					}
					tt.want(t, d)
					if got := d.FreeSpace(); got != free {
						t.Fatalf("FreeSpace after a failed SetList of %d elements = %d, want %d as before", n, got, free)
					}
					for k, v := range others {
						wantGet(t, d, k, v, 0)
					}
					break
				}
			})
		}
	}
}
