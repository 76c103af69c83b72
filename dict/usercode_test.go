package dict

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// User code runs inside Update and Mutate with the shard lock held and a
// view of the zone in its hands. Whatever it does with that view (append to
// it, panic, exit its goroutine) must not reach past the value it was given,
// leave the lock held, or leave a write half done.

// neighbours fills a one-shard zone with 64 keys of 16-byte values, in
// consecutive chunks of one slab class, and returns a check that every one
// but skip still holds its value.
func neighbours(t *testing.T, d *Dict, skip string) func() {
	t.Helper()
	val := func(i int) Value { return String(fmt.Sprintf("neighbour-%06d", i)) }
	for i := 0; i < 64; i++ {
		specSet(t, d, specKey(i), val(i), 0, uint32(i))
	}
	return func() {
		t.Helper()
		for i := 0; i < 64; i++ {
			if k := specKey(i); k != skip {
				wantGet(t, d, k, val(i), uint32(i))
			}
		}
	}
}

// spill is what the tests append to a slice of the zone: more than a
// neighbouring chunk holds.
var spill = bytes.Repeat([]byte{0xee}, 512)

// mustPanic calls f and fails unless it panics with want.
func mustPanic(t *testing.T, call string, want any, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if got := recover(); got != want {
			t.Fatalf("%s panicked with %v, want %v", call, got, want)
		}
	}()
	f()
}

// within runs f in a goroutine and fails if it has not returned after
// 30 s: a guard against a shard lock left held, which would hang the test.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: still waiting after a minute (a shard lock left held?)", what)
	}
}

func TestUpdateAppendStaysInValue(t *testing.T) {
	for _, found := range []bool{true, false} {
		t.Run(fmt.Sprintf("found=%v", found), func(t *testing.T) {
			d, _ := openTest(t, Options{Shards: 1})
			key := specKey(30)
			intact := neighbours(t, d, key)
			if !found {
				if err := d.Delete(key); err != nil {
					t.Fatal(err)
				}
			}
			var want []byte
			err := d.Update(key, func(cur Value, ok bool) (Value, time.Duration, bool) {
				if ok != found {
					t.Errorf("Update(%q) fn got ok = %v, want %v", key, ok, found)
				}
				b := cur.Bytes()
				if cap(b) != len(b) {
					t.Errorf("Update(%q): cur.Bytes() has len %d, cap %d; want no spare capacity", key, len(b), cap(b))
				}
				b = append(b, spill...)
				want = append([]byte(nil), b...)
				return Bytes(b), 0, true
			})
			if err != nil {
				t.Fatalf("Update(%q) appending %d bytes = %v", key, len(spill), err)
			}
			intact()
			specCheck(t, d)
			wantGet(t, d, key, Bytes(want), map[bool]uint32{true: 30, false: 0}[found])
		})
	}
}

func TestMutateAppendStaysInValue(t *testing.T) {
	for _, found := range []bool{true, false} {
		t.Run(fmt.Sprintf("found=%v", found), func(t *testing.T) {
			d, _ := openTest(t, Options{Shards: 1})
			key := specKey(30)
			intact := neighbours(t, d, key)
			if !found {
				if err := d.Delete(key); err != nil {
					t.Fatal(err)
				}
			}
			err := d.Mutate(key, 16, 0, func(b []byte, ok bool) bool {
				if ok != found {
					t.Errorf("Mutate(%q) fn got found = %v, want %v", key, ok, found)
				}
				if cap(b) != len(b) {
					t.Errorf("Mutate(%q): b has len %d, cap %d; want no spare capacity", key, len(b), cap(b))
				}
				b[0] = 'M'
				b = append(b, spill...) // a copy: writes to it are not stored
				b[1] = 'X'
				return true
			})
			if err != nil {
				t.Fatalf("Mutate(%q) appending %d bytes = %v", key, len(spill), err)
			}
			intact()
			specCheck(t, d)
			want := []byte("neighbour-000030")
			flags := uint32(30)
			if !found {
				want, flags = make([]byte, 16), 0
			}
			want[0] = 'M'
			wantGet(t, d, key, Bytes(want), flags)
		})
	}
}

// A panic in fn leaves the old value (or the absence of one), releases the
// lock, and reaches the caller unchanged; the Dict goes on working.
func TestUserPanicLeavesZoneSound(t *testing.T) {
	type boom struct{ op string }
	tests := []struct {
		name  string
		found bool
		call  func(d *Dict, key string, p any) func()
	}{
		{"Update/found", true, func(d *Dict, key string, p any) func() {
			return func() {
				d.Update(key, func(cur Value, ok bool) (Value, time.Duration, bool) { panic(p) })
			}
		}},
		{"Update/new", false, func(d *Dict, key string, p any) func() {
			return func() {
				d.Update(key, func(cur Value, ok bool) (Value, time.Duration, bool) { panic(p) })
			}
		}},
		{"Mutate/found", true, func(d *Dict, key string, p any) func() {
			return func() {
				d.Mutate(key, 16, 0, func(b []byte, _ bool) bool {
					copy(b, "half-written....") // some words changed, then
					panic(p)
				})
			}
		}},
		{"Mutate/new", false, func(d *Dict, key string, p any) func() {
			return func() {
				d.Mutate(key, 16, time.Minute, func(b []byte, _ bool) bool {
					copy(b, "half-written....")
					panic(p)
				})
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := openTest(t, Options{Shards: 1})
			key := specKey(30)
			intact := neighbours(t, d, key)
			if !tt.found {
				if err := d.Delete(key); err != nil {
					t.Fatal(err)
				}
			}
			free := d.FreeSpace()
			p := &boom{tt.name}
			within(t, tt.name, func() { mustPanic(t, tt.name, p, tt.call(d, key, p)) })
			within(t, "the next operations", func() {
				specCheck(t, d)
				intact()
				if tt.found {
					wantGet(t, d, key, String("neighbour-000030"), 30)
				} else {
					wantGetErr(t, d, key, ErrNotFound)
					if got := d.FreeSpace(); got != free {
						t.Errorf("FreeSpace after the panic = %d, want %d as before", got, free)
					}
				}
				// The process goes on using the key and the dict.
				if err := d.Mutate(key, 16, 0, func(b []byte, _ bool) bool { copy(b, "after-the-panic!"); return true }); err != nil {
					t.Fatalf("Mutate(%q) after the panic = %v", key, err)
				}
				wantGet(t, d, key, String("after-the-panic!"), map[bool]uint32{true: 30, false: 0}[tt.found])
				if err := d.Update(specKey(31), func(cur Value, ok bool) (Value, time.Duration, bool) {
					return String(cur.String() + "+"), 0, true
				}); err != nil {
					t.Fatalf("Update(%q) after the panic = %v", specKey(31), err)
				}
				wantGet(t, d, specKey(31), String("neighbour-000031+"), 31)
			})
		})
	}
}

// runtime.Goexit inside fn (t.FailNow in a test's callback does it) unwinds
// like a panic: the same undo, the lock released.
func TestUserGoexitLeavesZoneSound(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	key := specKey(30)
	intact := neighbours(t, d, key)
	calls := []func(){
		func() {
			d.Mutate(key, 16, 0, func(b []byte, _ bool) bool { b[0] = 'X'; runtime.Goexit(); return true })
		},
		func() {
			d.Mutate("new", 16, 0, func(b []byte, _ bool) bool { b[0] = 'X'; runtime.Goexit(); return true })
		},
		func() {
			d.Update(key, func(Value, bool) (Value, time.Duration, bool) { runtime.Goexit(); return Int(1), 0, true })
		},
	}
	for i, f := range calls {
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		<-done
		within(t, fmt.Sprintf("call %d", i), func() {
			specCheck(t, d)
			intact()
			wantGet(t, d, key, String("neighbour-000030"), 30)
			wantGetErr(t, d, "new", ErrNotFound)
		})
	}
}

// Every slice of zone memory the package hands out has no spare capacity:
// the values Scan and LRange report, and Get's copies.
func TestHandedSlicesAreCapped(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	intact := neighbours(t, d, "")
	for i := 0; i < 3; i++ {
		if _, err := d.RPush("list", Bytes([]byte{byte(i), 1, 2})); err != nil {
			t.Fatal(err)
		}
	}
	capped := func(what string, v Value) {
		t.Helper()
		if b := v.Bytes(); cap(b) != len(b) {
			t.Errorf("%s: len %d, cap %d; want no spare capacity", what, len(b), cap(b))
		}
	}
	err := d.Scan(func(it Item) bool {
		capped("Scan value of "+it.Key, it.Value)
		for _, e := range it.List {
			capped("Scan list element of "+it.Key, e)
		}
		if cap(it.List) != len(it.List) {
			t.Errorf("Scan list of %s: len %d, cap %d", it.Key, len(it.List), cap(it.List))
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := d.LRange("list")
	if err != nil || len(vs) != 3 {
		t.Fatalf("LRange(\"list\") = %v, %v; want 3 elements", vs, err)
	}
	for _, v := range vs {
		capped("LRange element", v)
	}
	v, _, err := d.Get(specKey(3))
	if err != nil {
		t.Fatal(err)
	}
	capped("Get", v)
	v, err = d.LPop("list")
	if err != nil {
		t.Fatal(err)
	}
	capped("LPop", v)
	intact()
}

func TestUpdateMutatePanicAllocs(t *testing.T) {
	// The undo machinery costs nothing when fn returns: Mutate and an
	// Update that keeps its value allocate nothing.
	d, _ := openTest(t, Options{})
	if err := d.Mutate("m", 16, 0, add1); err != nil {
		t.Fatal(err)
	}
	specSet(t, d, "u", Int(1), 0, 0)
	inc := func(cur Value, ok bool) (Value, time.Duration, bool) { return Int(cur.Int() + 1), 0, true }
	for _, tt := range []struct {
		name string
		f    func() error
	}{
		{"Mutate found", func() error { return d.Mutate("m", 16, 0, add1) }},
		{"Mutate new, not kept", func() error {
			return d.Mutate("absent", 16, 0, func([]byte, bool) bool { return false })
		}},
		{"Update int", func() error { return d.Update("u", inc) }},
	} {
		var err error
		if n := testing.AllocsPerRun(1000, func() {
			if e := tt.f(); e != nil {
				err = e
			}
		}); n != 0 || err != nil {
			t.Errorf("%s: %v allocations per call, error %v; want 0, <nil>", tt.name, n, err)
		}
	}
}

// A panic in Mutate's fn gives the entry back every byte it had, whatever
// the value's size: those kept in the small undo buffer (undoSmall) and
// those in the large one, at the edges of both.
func TestMutatePanicRestoresEverySize(t *testing.T) {
	d, _ := openTest(t, Options{Shards: 1})
	for _, size := range []int{1, undoSmall - 1, undoSmall, undoSmall + 1, MaxMutateSize - 1, MaxMutateSize} {
		key := fmt.Sprint("undo-", size)
		want := make([]byte, size)
		for i := range want {
			want[i] = byte('a' + (i+size)%26)
		}
		specSet(t, d, key, Bytes(want), 0, 7)
		p := fmt.Sprint("boom ", size)
		mustPanic(t, key, p, func() {
			d.Mutate(key, size, 0, func(b []byte, _ bool) bool {
				for i := range b {
					b[i] = 'X' // every byte written, then
				}
				panic(p)
			})
		})
		wantGet(t, d, key, Bytes(want), 7)
		// The next Mutate of the key sees the old bytes and writes.
		if err := d.Mutate(key, size, 0, func(b []byte, _ bool) bool {
			if !bytes.Equal(b, want) {
				t.Errorf("size %d: Mutate after the panic sees %q, want %q", size, b, want)
			}
			b[0] = 'Z'
			return true
		}); err != nil {
			t.Fatal(err)
		}
		want[0] = 'Z'
		wantGet(t, d, key, Bytes(want), 7)
	}
}
