package dict

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/shmzone/shmzone/shm"
)

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
		normalizeLocks(zone)
		path := filepath.Join(t.TempDir(), "fuzz.zone")
		if err := os.WriteFile(path, zone, 0o600); err != nil {
			t.Fatal(err)
		}
		// Bound the run: a hang is a crash, with every goroutine's stack.
		watchdog := time.AfterFunc(20*time.Second, func() {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("FuzzOpen: run of input %x still going after 20s", in))
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

// fuzzT0 is the clock of the base zone, Unix ms.
const fuzzT0 int64 = 1_700_000_000_000

// Header fields the fuzz test rewrites (shm/layout.go pins them).
const (
	hdrSeedOff      = 56
	hdrCreatedAtOff = 72
	hdrChecksumOff  = 80
)

// Slab layout constants for aiming seeds (slab/layout.go pins them): the
// header, the class heads, then a 48-byte descriptor per page.
const (
	slabNPagesOff   = 8
	slabPagesOffOff = 12
	slabFreeRunsOff = 16
	slabClassHeads  = 56
	slabDescStart   = (slabClassHeads + 47*4 + 7) &^ 7
	slabDescSize    = 48
)

// baseZone is the zone every fuzz input patches, and where its parts are.
type baseZone struct {
	bytes []byte
	hdr   shm.Header
	// entry, slot and shard of each key: absolute file offsets.
	entry map[string]int
	slot  map[string]int
	shard map[string]int
	arena []int // absolute offset of each shard's arena
	pages []int // absolute offset of each shard's page 0
}

var (
	fuzzBaseOnce  sync.Once
	fuzzBaseZone  *baseZone
	fuzzBaseError error
)

// fuzzKeys are the keys of the base zone, by kind; fuzzOps uses them too.
var fuzzKeys = struct {
	ints, floats, bools, small, large, ttl, lists []string
}{
	ints:   []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "counter:0000001", "counter:0000002"},
	floats: []string{"f0", "f1"},
	bools:  []string{"t0", "t1"},
	small:  []string{"s0", "s1", "s2", "s3", "b1", "b2"},
	large:  []string{"big0", "big1"},
	ttl:    []string{"e0", "e1", "e2", "e3"},
	lists:  []string{"L0", "L1", "L2"},
}

// fuzzSmallValue is the base value of small bytes keys: b1 and b2 take 130
// bytes with their 2-byte key, in a 144-byte chunk, so that a 100-byte value
// is written in place.
func fuzzSmallValue(key string) string {
	if key == "b1" || key == "b2" {
		return strings.Repeat(key, 45)
	}
	return "value of " + key
}

// fuzzBase builds the base zone once per process: 2 shards of the smallest
// size with a fixed hash seed, so that every process and every run sees the
// same bytes.
func fuzzBase(tb testing.TB) *baseZone {
	tb.Helper()
	fuzzBaseOnce.Do(func() { fuzzBaseZone, fuzzBaseError = buildFuzzBase() })
	if fuzzBaseError != nil {
		tb.Fatalf("base zone: %v", fuzzBaseError)
	}
	return fuzzBaseZone
}

func buildFuzzBase() (*baseZone, error) {
	dir, err := os.MkdirTemp("", "fuzzbase")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "base.zone")
	clock := func() int64 { return fuzzT0 }
	o := Options{Size: shm.HeaderSize + 2*shm.MinShardSize, Shards: 2, Clock: clock}
	d, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	d.Close()
	if err := fixSeed(path, 0x5eed5eed5eed5eed); err != nil {
		return nil, err
	}
	if d, err = Open(path, Options{Clock: clock}); err != nil {
		return nil, err
	}
	k := fuzzKeys
	set := func(key string, v Value, ttl time.Duration) {
		if err == nil {
			_, err = d.Set(key, v, ttl, 7)
		}
	}
	for i, key := range k.ints {
		set(key, Int(int64(i*1000)), 0)
	}
	for i, key := range k.floats {
		set(key, Float(float64(i)+0.5), 0)
	}
	for i, key := range k.bools {
		set(key, Bool(i == 0), 0)
	}
	for _, key := range k.small {
		set(key, String(fuzzSmallValue(key)), 0)
	}
	for i, key := range k.large {
		set(key, Bytes(make([]byte, 3000+5000*i)), 0)
	}
	for i, key := range k.ttl {
		set(key, Int(int64(i)), time.Second)
	}
	for i, key := range k.lists {
		for j := 0; j <= i+1 && err == nil; j++ {
			_, err = d.RPush(key, Int(int64(j)))
		}
		if err == nil {
			_, err = d.LPush(key, String("head of "+key))
		}
	}
	if err == nil {
		err = d.Check()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	b := &baseZone{
		hdr:   d.z.Header(),
		entry: map[string]int{},
		slot:  map[string]int{},
		shard: map[string]int{},
	}
	for i := range d.shards {
		s := &d.shards[i]
		shardOff := int(b.hdr.ShardOff) + i*int(b.hdr.ShardSize)
		arena := shardOff + arenaOffset(b.hdr.IndexSize)
		b.arena = append(b.arena, arena)
		b.pages = append(b.pages, arena+int(binary.NativeEndian.Uint32(s.arena[slabPagesOffOff:])))
	}
	for _, group := range [][]string{k.ints, k.floats, k.bools, k.small, k.large, k.ttl, k.lists} {
		for _, key := range group {
			h := hashKey(d.seed, key)
			s := d.shardFor(h)
			off, _, err := s.findLocked(key, h)
			if err != nil || off == 0 {
				d.Close()
				return nil, fmt.Errorf("key %q not found: %v", key, err)
			}
			shardOff := int(b.hdr.ShardOff) + s.id*int(b.hdr.ShardSize)
			b.shard[key] = s.id
			b.entry[key] = b.arena[s.id] + int(off)
			b.slot[key] = shardOff + indexOff + int(s.bucket(h))*slotSize
		}
	}
	d.Close()
	if b.bytes, err = os.ReadFile(path); err != nil {
		return nil, err
	}
	return b, nil
}

// fixSeed rewrites the hash seed and creation time of an empty zone and its
// header checksum: zones are created with a random seed.
func fixSeed(path string, seed uint64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	binary.NativeEndian.PutUint64(b[hdrSeedOff:], seed)
	binary.NativeEndian.PutUint64(b[hdrCreatedAtOff:], uint64(fuzzT0))
	resumHeader(b)
	return os.WriteFile(path, b, 0o600)
}

// resumHeader recomputes the header checksum of a zone's bytes.
func resumHeader(b []byte) {
	binary.NativeEndian.PutUint64(b[hdrChecksumOff:], xxhash.Sum64(b[:hdrChecksumOff]))
}

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

// normalizeLocks frees the lock words that name a live process (this one
// included): such a lock is waited for as long as its owner lives, by design,
// so a file that names one would only make the run wait. A lock of a dead
// owner stays, to be taken over and repaired.
func normalizeLocks(zone []byte) {
	h, err := shm.ParseHeader(zone, int64(len(zone)), Layout)
	if err != nil {
		return
	}
	for i := 0; i < h.Shards; i++ {
		w := zone[int(h.ShardOff)+i*int(h.ShardSize)+hLock:]
		if pid := uint32(binary.NativeEndian.Uint64(w)); pid != 0 && shm.Alive(pid) {
			binary.NativeEndian.PutUint64(w, 0)
		}
	}
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

// A seed is a fuzz input under construction.
type seed []byte

func newSeed(flags byte) seed { return seed{flags} }

// put patches b at off.
func (s seed) put(off int, b ...byte) seed {
	s = append(s, byte(off), byte(off>>8), byte(off>>16), byte(len(b)))
	return append(s, b...)
}

func (s seed) u8(off int, v uint8) seed { return s.put(off, v) }

func (s seed) u16(off int, v uint16) seed {
	return s.put(off, binary.NativeEndian.AppendUint16(nil, v)...)
}

func (s seed) u32(off int, v uint32) seed {
	return s.put(off, binary.NativeEndian.AppendUint32(nil, v)...)
}

func (s seed) u64(off int, v uint64) seed {
	return s.put(off, binary.NativeEndian.AppendUint64(nil, v)...)
}

// Offsets of the fields of an entry and a shard header (layout.go).
const (
	eNext   = int(unsafe.Offsetof(entry{}.Next))
	ePrev   = int(unsafe.Offsetof(entry{}.Prev))
	eLNext  = int(unsafe.Offsetof(entry{}.LNext))
	eExpiry = int(unsafe.Offsetof(entry{}.Expiry))
	eVLen   = int(unsafe.Offsetof(entry{}.VLen))
	eKLen   = int(unsafe.Offsetof(entry{}.KLen))
	eTag    = int(unsafe.Offsetof(entry{}.Tag))
	eKind   = int(unsafe.Offsetof(entry{}.Bits)) // the Kind and refBit

	hLock    = int(unsafe.Offsetof(shardHdr{}.Lock))
	hDrop    = int(unsafe.Offsetof(shardHdr{}.Drop))
	hLRUHead = int(unsafe.Offsetof(shardHdr{}.LRUHead))
	hLRUTail = int(unsafe.Offsetof(shardHdr{}.LRUTail))
	hCount   = int(unsafe.Offsetof(shardHdr{}.Count))
)

// fuzzSeeds returns the seed corpus: every kind of damage the fuzz target
// must survive, aimed at the base zone's known offsets.
func fuzzSeeds(tb testing.TB, b *baseZone) [][]byte {
	tb.Helper()
	hdr := b.hdr
	shardAt := func(i int) int { return int(hdr.ShardOff) + i*int(hdr.ShardSize) }
	// rel turns an absolute offset into the arena offset stored in links.
	rel := func(key string, abs int) uint32 { return uint32(abs - b.arena[b.shard[key]]) }
	ent := func(key string) int { return b.entry[key] }
	off := func(key string) uint32 { return rel(key, ent(key)) }
	sh := func(key string) int { return shardAt(b.shard[key]) }
	le := func(off int) uint32 { return binary.NativeEndian.Uint32(b.bytes[off:]) }
	// desc returns the absolute offset of the descriptor of page p of a shard.
	desc := func(shard, p int) int { return b.arena[shard] + slabDescStart + p*slabDescSize }
	// pageOf returns the shard's page that holds a key's entry.
	pageOf := func(key string) int { return (ent(key) - b.pages[b.shard[key]]) / int(hdr.PageSize) }
	// list returns the absolute offset of a list entry's listHdr.
	list := func(key string) int { return ent(key) + valOff(len(key)) }
	arenaLen := int(hdr.ShardSize) - arenaOffset(hdr.IndexSize)
	big, n0, s0, l0, l1 := "big1", "n0", "s0", "L0", "L1"

	var seeds []seed
	add := func(s ...seed) { seeds = append(seeds, s...) }
	add(newSeed(0), newSeed(fuzzLater))

	// The header: its fields, with and without a fixed checksum.
	for _, f := range []struct {
		off int
		v   uint32
	}{
		{0, 0x4f4f4f4f}, {8, 2}, {12, 0x04030201}, {16, 0x12345678}, {20, 1024}, {20, 65536},
		{32, 1}, {32, 4}, {36, 512}, {36, 2048}, {36, 1 << 20}, {48, 2 * shm.MinShardSize},
		{56, 1}, {64, 2}, {hdrChecksumOff, 0},
	} {
		add(newSeed(0).u32(f.off, f.v), newSeed(fuzzResum).u32(f.off, f.v))
	}
	// One shard of twice the size: consistent geometry, other shard layout.
	add(newSeed(fuzzResum).u32(32, 1).u64(48, uint64(2*hdr.ShardSize)))
	// Another seed: every key hashes elsewhere.
	add(newSeed(fuzzResum).u64(hdrSeedOff, 42))

	// Shard headers: locks of dead owners, unfinished writes, LRU ends,
	// counts.
	for i := 0; i < hdr.Shards; i++ {
		add(
			newSeed(0).u64(shardAt(i)+hLock, 1<<22+1),
			newSeed(0).u32(shardAt(i)+hDrop, dropUnreachable),
			newSeed(0).u32(shardAt(i)+hDrop, 0x1238),
			newSeed(0).u32(shardAt(i)+hLRUHead, 0xfffffff8),
			newSeed(0).u32(shardAt(i)+hLRUTail, 0xfffffff8),
			newSeed(0).u32(shardAt(i)+hLRUTail, 13),
			newSeed(0).u32(shardAt(i)+hCount, 0xffffffff),
			newSeed(0).put(shardAt(i), make([]byte, 128)...),
		)
	}
	add(newSeed(0).u32(sh(n0)+hDrop, off(n0)), newSeed(0).u32(sh(l0)+hDrop, off(l0)))

	// Index slots: out of bounds, misaligned, at the arena's end, into the
	// slab header, into another entry, at themselves.
	for _, key := range []string{n0, s0, l0, big, "e0"} {
		slot := b.slot[key]
		add(
			newSeed(0).u32(slot, 0xfffffff8),
			newSeed(0).u32(slot, uint32(arenaLen)),
			newSeed(0).u32(slot, uint32(arenaLen-entryHdrSize)),
			newSeed(0).u32(slot, off(key)+4),
			newSeed(0).u32(slot, off(key)+1),
			newSeed(0).u32(slot, 8),
			newSeed(0).u32(slot, off(key)+uint32(valOff(len(key)))),
			newSeed(0).u32(slot, off("s1")),
			newSeed(0).u32(slot, off(big)),
			newSeed(0).put(slot, make([]byte, 64)...),
		)
	}
	// Every slot of shard 0's index pointing at one entry.
	{
		s := newSeed(0)
		for i := 0; i < 64; i++ {
			s = s.u32(shardAt(0)+indexOff+i*slotSize, 64)
		}
		add(s)
	}
	// An entry copied to the arena's end and indexed there: in-place writes
	// must not run past the arena.
	for _, key := range []string{"b1", "b2", n0, "t0"} {
		size := entrySize(len(key), len(fuzzSmallValue(key)))
		switch key {
		case n0:
			size = entrySize(len(key), 8)
		case "t0":
			size = entrySize(len(key), 1)
		}
		at := arenaLen - (size+7)&^7
		body := b.bytes[ent(key) : ent(key)+size]
		abs := b.arena[b.shard[key]] + at
		add(newSeed(0).put(abs, body...).u32(b.slot[key], uint32(at)).u32(abs+eNext, 0))
	}

	// Chains: an entry whose next is itself, two entries in a cycle.
	for _, key := range []string{n0, s0, l0, "e1"} {
		add(newSeed(0).u32(ent(key)+eNext, off(key)))
		add(newSeed(0).u32(ent(key)+eNext, 0xfffffff8))
		add(newSeed(0).u32(ent(key)+eNext, off(key)+2))
	}
	add(newSeed(0).u32(ent("n1")+eNext, off("n2")).u32(ent("n2")+eNext, off("n1")).u32(b.slot["n1"], off("n1")))

	// LRU: self links, cycles, out of bounds, the tail's prev at itself.
	for _, key := range []string{n0, s0, l1} {
		add(
			newSeed(0).u32(ent(key)+eLNext, off(key)),
			newSeed(0).u32(ent(key)+ePrev, off(key)),
			newSeed(0).u32(ent(key)+ePrev, off(key)).u32(ent(key)+eLNext, off(key)),
			newSeed(0).u32(ent(key)+ePrev, 0xfffffff8),
			newSeed(0).u32(ent(key)+eLNext, 0x7),
			newSeed(0).u32(sh(key)+hLRUTail, off(key)).u32(ent(key)+ePrev, off(key)),
			newSeed(0).u32(sh(key)+hLRUHead, off(key)).u32(ent(key)+eLNext, off(key)),
		)
	}
	// The entry being replaced (pinned) in a cycle at the tail, a count that
	// lies, and no free pages: the eviction walk must stay bounded.
	for _, key := range []string{"n1", s0} {
		a := b.arena[b.shard[key]]
		add(newSeed(0).u32(sh(key)+hCount, 0xffffffff).u32(sh(key)+hLRUTail, off(key)).
			u32(ent(key)+ePrev, off(key)).u32(a+slabFreeRunsOff, 0))
	}
	add(newSeed(0).u32(ent("n3")+ePrev, off("n4")).u32(ent("n4")+ePrev, off("n3")).u32(sh("n3")+hLRUTail, off("n3")))

	// Entry headers: huge or wrong lengths, bad kinds, zero key, expiry.
	for _, key := range []string{n0, s0, "b1", l0, big, "t0", "f0"} {
		add(
			newSeed(0).u16(ent(key)+eKLen, 0xffff),
			newSeed(0).u16(ent(key)+eKLen, 0),
			newSeed(0).u32(ent(key)+eVLen, 0xffffffff),
			newSeed(0).u32(ent(key)+eVLen, 0x7fffffff),
			newSeed(0).u32(ent(key)+eVLen, 4),
			newSeed(0).u32(ent(key)+eVLen, 16),
			newSeed(0).u32(ent(key)+eVLen, 3000),
			newSeed(0).u8(ent(key)+eKind, 0),
			newSeed(0).u8(ent(key)+eKind, 9),
			newSeed(0).u8(ent(key)+eKind, uint8(KindList)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindBytes)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindInt)),
			newSeed(0).u8(ent(key)+eKind, uint8(KindBool)),
			newSeed(0).u8(ent(key)+eKind, refBit|uint8(KindInt)),
			newSeed(0).u8(ent(key)+eKind, 0xff),
			newSeed(0).u8(ent(key)+eKind, 0x40|uint8(KindBytes)),
			newSeed(0).u8(ent(key)+eTag, 0),
			newSeed(0).u64(ent(key)+eExpiry, 1),
			newSeed(0).u64(ent(key)+eExpiry, 1<<63),
			newSeed(0).put(ent(key), make([]byte, 48)...),
		)
	}

	// Lists: heads and tails out of bounds, misaligned, at the entry, at
	// themselves; node links in cycles; lengths that lie.
	for _, key := range []string{l0, l1, "L2"} {
		lh := list(key)
		head := le(lh + 4)
		tail := le(lh + 8)
		headAbs := b.arena[b.shard[key]] + int(head)
		add(
			newSeed(0).u32(lh+4, 0xfffffff8),
			newSeed(0).u32(lh+4, 0x7fff0000),
			newSeed(0).u32(lh+4, head+4),
			newSeed(0).u32(lh+4, off(key)),
			newSeed(0).u32(lh+4, uint32(arenaLen-8)),
			newSeed(0).u32(lh+8, 0xfffffff8),
			newSeed(0).u32(lh+8, off(key)),
			newSeed(0).u32(lh+8, 0),
			newSeed(0).u32(lh, 0),
			newSeed(0).u32(lh, 0xffffffff),
			newSeed(0).u32(lh, 1),
			newSeed(0).u32(headAbs, head),
			newSeed(0).u32(headAbs, tail).u32(b.arena[b.shard[key]]+int(tail), head),
			newSeed(0).u32(headAbs, 0xfffffff8),
			newSeed(0).u32(headAbs+4, head),
			newSeed(0).u32(headAbs+8, 0xffffffff),
			newSeed(0).u8(headAbs+12, 0),
			newSeed(0).u8(headAbs+12, 9),
			newSeed(0).u32(headAbs, off(key)),
			newSeed(0).u32(headAbs, off(s0)),
		)
	}

	// Slab: header words, class heads, descriptors of the pages that hold
	// entries, free runs, runs whose bodies lie.
	for i := 0; i < hdr.Shards; i++ {
		a := b.arena[i]
		add(
			newSeed(0).u32(a, 0),
			newSeed(0).u32(a+4, 512),
			newSeed(0).u32(a+slabNPagesOff, 1000),
			newSeed(0).u32(a+slabPagesOffOff, 64),
			newSeed(0).u32(a+slabFreeRunsOff, 0xffffffff),
			newSeed(0).u32(a+slabFreeRunsOff, 1),
			newSeed(0).u32(a+slabFreeRunsOff+4, 0xffffffff),
			newSeed(0).u64(a+slabFreeRunsOff+8, 0),
			newSeed(0).put(a+slabClassHeads, make([]byte, 47*4)...),
		)
		for c := 0; c < 47; c += 6 {
			add(newSeed(0).u32(a+slabClassHeads+4*c, 1), newSeed(0).u32(a+slabClassHeads+4*c, 0xffff))
		}
		np := int(binary.NativeEndian.Uint32(b.bytes[a+slabNPagesOff:]))
		for p := 0; p < np; p++ {
			dp := desc(i, p)
			add(
				newSeed(0).u8(dp+12, 0),
				newSeed(0).u8(dp+12, 9),
				newSeed(0).u8(dp+12, 4).u32(dp+8, 3),
				newSeed(0).u32(dp+8, 0xffffffff),
				newSeed(0).u32(dp+8, 0),
				newSeed(0).u8(dp+13, 200),
				newSeed(0).u8(dp+13, 0),
				newSeed(0).u16(dp+14, 0xffff),
				newSeed(0).u16(dp+14, 0),
				newSeed(0).put(dp+16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
				newSeed(0).put(dp+16, make([]byte, 32)...),
				newSeed(0).u32(dp, uint32(p+1)),
				newSeed(0).u32(dp+4, uint32(p+1)),
				newSeed(0).u32(dp, 0xffff),
			)
		}
		// A run of 3 pages from page 0, over pages of other kinds.
		add(newSeed(0).u8(desc(i, 0)+12, 4).u32(desc(i, 0)+8, 3))
		// A free run that covers allocated pages.
		add(newSeed(0).u8(desc(i, 0)+12, 1).u32(desc(i, 0)+8, uint32(np)).u32(a+slabFreeRunsOff, 1))
	}
	// The run that holds big1: body pages of another kind or head.
	bp := pageOf(big)
	bs := b.shard[big]
	add(
		newSeed(0).u8(desc(bs, bp+1)+12, 3),
		newSeed(0).u8(desc(bs, bp+1)+12, 3).u8(desc(bs, bp+1)+13, 6).put(desc(bs, bp+1)+16, 1),
		newSeed(0).u32(desc(bs, bp+1)+8, 0),
		newSeed(0).u32(desc(bs, bp)+8, 1),
		newSeed(0).u32(desc(bs, bp)+8, 40),
	)

	// Garbage over whole regions.
	for i := 0; i < hdr.Shards; i++ {
		junk := make([]byte, 255)
		for j := range junk {
			junk[j] = byte(j*131 + 7)
		}
		add(
			newSeed(0).put(b.arena[i], junk...),
			newSeed(0).put(b.pages[i], junk...),
			newSeed(0).put(shardAt(i)+indexOff, junk...),
			newSeed(0).put(b.arena[i]+slabDescStart, junk...),
		)
	}

	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		out[i] = s
	}
	return out
}
