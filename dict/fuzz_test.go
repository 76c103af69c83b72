package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// The FuzzOpen target and what it does with each input: apply the patches,
// free live lock words, run every operation, accept only sentinel errors.
// Its base zone is in fuzz_base_test.go, its seed corpus in
// fuzz_seeds_test.go.

// FuzzOpen opens zone files patched by the fuzzer and runs every operation on
// them: none may panic, fault or hang, every error must be one of the
// package's sentinels, and after Repair the zone must pass Check and keep
// working.
//
// The input is a flags byte followed by patches, each a 3-byte little-endian
// file offset (taken modulo the file size), a length byte and that many bytes,
// applied to a copy of a small zone written by the dict (fuzzBase). Flag
// fuzzResum recomputes the header checksum after patching, so that patches
// of the header's fields reach the geometry checks and the shards; inputs
// without it that patch only shard bytes pass header validation as they are.
func FuzzOpen(f *testing.F) {
	base := fuzzBase(f)
	for _, seed := range fuzzSeeds(f, base) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		defer func() {
			if t.Failed() {
				t.Logf("input: %s", describePatches(in))
			}
		}()
		zone, flags := applyPatches(base.bytes, in)
		path := filepath.Join(t.TempDir(), "fuzz.zone")
		if err := os.WriteFile(path, zone, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := normalizeLocks(path, zone); err != nil {
			t.Fatal(err)
		}
		// Bound the run: a hang is a crash, with every goroutine's stack.
		watchdog := time.AfterFunc(time.Minute, func() {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("FuzzOpen: run of input %x still going after a minute", in))
		})
		defer watchdog.Stop()
		now := fuzzT0
		if flags&fuzzLater != 0 {
			now += 10_000 // every TTL of the base zone has passed
		}
		d, err := Open(path, Options{Clock: func() int64 { return now }})
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("Open = %v, want nil or a sentinel error", err)
			}
			return
		}
		defer d.Close()
		fuzzOps(t, d, false)
		n, err := d.Repair()
		if err != nil {
			t.Fatalf("Repair = %d, %v", n, err)
		}
		if err := d.Check(); err != nil {
			t.Fatalf("Check after Repair (%d shards rebuilt) = %v", n, err)
		}
		fuzzOps(t, d, true)
		if err := d.Check(); err != nil {
			t.Fatalf("Check after Repair and more operations = %v", err)
		}
	})
}

// Flags of a fuzz input's first byte.
const (
	fuzzResum = 1 << iota // recompute the header checksum after patching
	fuzzLater             // run with the clock past every TTL of the base zone
)

// applyPatches returns a patched copy of zone and the input's flags.
func applyPatches(zone, in []byte) ([]byte, byte) {
	out := append([]byte(nil), zone...)
	if len(in) == 0 {
		return out, 0
	}
	flags := in[0]
	in = in[1:]
	for len(in) >= 4 {
		off := int(in[0]) | int(in[1])<<8 | int(in[2])<<16
		n := int(in[3])
		in = in[4:]
		n = min(n, len(in))
		copy(out[off%len(out):], in[:n])
		in = in[n:]
	}
	if flags&fuzzResum != 0 {
		resumHeader(out)
	}
	return out, flags
}

// describePatches renders a fuzz input for a failure message.
func describePatches(in []byte) string {
	if len(in) == 0 {
		return "no flags, no patches"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "flags %#x", in[0])
	in = in[1:]
	for len(in) >= 4 {
		off := int(in[0]) | int(in[1])<<8 | int(in[2])<<16
		n := min(int(in[3]), len(in)-4)
		fmt.Fprintf(&b, "; at %#x: % x", off, in[4:4+n])
		in = in[4+n:]
	}
	return b.String()
}

// normalizeLocks frees the lock words that name owner slot 0, the slot this
// process's Open claims (the file is new to it): one of them would name this
// process's zone, whose lock is waited for as long as it is open, by design,
// so such a file would only make the run wait. A lock of any other slot
// names an owner that is gone, or none, and stays, to be taken over and
// repaired. zone holds the bytes of the file at path. The header is read
// by a read-only Open, which claims no slot and writes nothing. A file it
// refuses is left as it is: Open refuses it too.
func normalizeLocks(path string, zone []byte) error {
	z, err := shm.Open(path, shm.Options{ReadOnly: true, Layout: Layout})
	if err != nil {
		return nil
	}
	h := z.Header()
	if err := z.Close(); err != nil {
		return err
	}
	freed := false
	for i := 0; i < h.Shards; i++ {
		w := zone[int(h.ShardOff)+i*int(h.ShardSize)+hLock:]
		if word := binary.NativeEndian.Uint64(w); word != 0 && uint32(word) == 0 {
			binary.NativeEndian.PutUint64(w, 0)
			freed = true
		}
	}
	if !freed {
		return nil
	}
	return os.WriteFile(path, zone, 0o600)
}

// isSentinel reports whether err is one of the errors the package documents.
func isSentinel(err error) bool {
	for _, s := range []error{
		ErrNotFound, ErrExists, ErrNoMemory, ErrNotNumber, ErrNotList, ErrIsList,
		ErrValueTooLarge, ErrCorrupt, ErrBadValue,
		shm.ErrNotZone, shm.ErrVersion, shm.ErrCorrupt,
	} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzOps runs every operation on a few keys of each kind and on new keys.
// Errors must be sentinels; once the zone is repaired (sound), none may be
// ErrCorrupt, and a new key must read back.
func fuzzOps(t *testing.T, d *Dict, sound bool) {
	t.Helper()
	ok := func(op string, err error) {
		t.Helper()
		switch {
		case err == nil:
		case !isSentinel(err):
			t.Fatalf("%s = %v, want nil or a sentinel error", op, err)
		case sound && errors.Is(err, ErrCorrupt):
			t.Fatalf("%s on a repaired zone = %v", op, err)
		}
	}
	k := fuzzKeys
	keys := []string{
		k.ints[0], k.ints[1], k.ints[8], k.floats[0], k.bools[0], k.small[0], k.small[1],
		"b1", "b2", k.large[0], k.ttl[0], k.ttl[1], k.lists[0], k.lists[1], "absent",
	}
	buf := make([]byte, 0, 64)
	for _, key := range keys {
		_, _, err := d.Get(key)
		ok("Get "+key, err)
		_, _, err = d.GetInto(key, buf)
		ok("GetInto "+key, err)
		_, _, _, err = d.GetStale(key)
		ok("GetStale "+key, err)
		_, err = d.TTL(key)
		ok("TTL "+key, err)
		_, err = d.LLen(key)
		ok("LLen "+key, err)
	}
	large := make([]byte, 5000)
	for i, key := range keys {
		switch i % 5 {
		case 0:
			_, err := d.Set(key, Int(int64(i)), 0, 1)
			ok("Set int "+key, err)
			_, err = d.Incr(key, 3)
			ok("Incr "+key, err)
		case 1:
			_, err := d.Set(key, Bytes(large), time.Minute, 2)
			ok("Set large "+key, err)
			_, err = d.CompareAndSwap(key, Bytes(large), Int(5), 0)
			ok("CompareAndSwap "+key, err)
		case 2:
			_, err := d.Set(key, String(strings.Repeat("x", 100)), 0, 3)
			ok("Set 100 bytes "+key, err)
			_, err = d.Add(key, Int(1), 0, 0)
			ok("Add "+key, err)
		case 3:
			_, _, err := d.IncrInit(key, 1, 10, time.Second)
			ok("IncrInit "+key, err)
			_, err = d.IncrFloat(key, 0.5)
			ok("IncrFloat "+key, err)
			ok("Expire "+key, d.Expire(key, time.Hour))
		case 4:
			_, err := d.LPush(key, Int(1))
			ok("LPush "+key, err)
			_, err = d.RPush(key, String("tail"))
			ok("RPush "+key, err)
			_, err = d.LPop(key)
			ok("LPop "+key, err)
			_, err = d.RPop(key)
			ok("RPop "+key, err)
		}
	}
	for _, key := range k.lists {
		_, err := d.RPop(key)
		ok("RPop "+key, err)
		_, err = d.LPop(key)
		ok("LPop "+key, err)
		_, err = d.LPush(key, Bytes(large[:100]))
		ok("LPush "+key, err)
	}
	for _, key := range []string{"b1", "b2", k.small[2], k.ints[2]} {
		_, err := d.Set(key, String(strings.Repeat("y", 100)), 0, 0)
		ok("Set 100 bytes "+key, err)
		_, err = d.Replace(key, Float(2.5), 0, 0)
		ok("Replace "+key, err)
	}
	for _, key := range []string{k.ints[3], k.small[3], k.lists[2], k.ttl[2]} {
		ok("Update "+key, d.Update(key, func(cur Value, exists bool) (Value, time.Duration, bool) {
			if cur.Kind() == KindInt {
				return Int(cur.Int() + 1), 0, true
			}
			return String("updated"), time.Minute, exists
		}))
		_, err := d.CompareAndSwap(key, Int(3001), Int(1), 0)
		ok("CompareAndSwap "+key, err)
		ok("Delete "+key, d.Delete(key))
		_, err = d.Add(key, Int(9), 0, 0)
		ok("Add "+key, err)
		ok("SafeSet "+key, d.SafeSet(key, Bool(true), 0, 0))
		ok("SafeAdd "+key, d.SafeAdd(key+"+", Int(1), 0, 0))
	}
	for i := 0; i < 8; i++ {
		key := fmt.Sprintf("new%d", i)
		_, err := d.Set(key, Int(int64(i)), 0, 0)
		ok("Set "+key, err)
		if sound && err == nil {
			if v, _, err := d.Get(key); err != nil || v.Int() != int64(i) {
				t.Fatalf("Get(%q) = %v, %v after Set on a repaired zone, want %d", key, v, err, i)
			}
		}
	}
	_, err := d.Keys(0)
	ok("Keys(0)", err)
	_, err = d.Keys(3)
	ok("Keys(3)", err)
	_, err = d.FlushExpired(0)
	ok("FlushExpired", err)
	_ = d.Stats()
	_ = d.ShardStats(0)
	_ = d.SlabStats()
	_ = d.FreeSpace()
	if err := d.Check(); err != nil {
		if sound {
			t.Fatalf("Check after operations on a repaired zone = %v", err)
		}
		ok("Check", err)
	}
}
