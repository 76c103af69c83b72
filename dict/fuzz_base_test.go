package dict

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/shmzone/shmzone/shm"
)

// The base zone FuzzOpen patches: built once per process with fixed keys,
// seed and clock, so that every run sees the same bytes.

// fuzzT0 is the clock of the base zone, Unix ms.
const fuzzT0 int64 = 1_700_000_000_000

// Header fields the fuzz test rewrites (shm/layout.go pins them).
const (
	hdrSeedOff      = 56
	hdrCreatedAtOff = 72
	hdrChecksumOff  = 80
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
		arena := shardOff + arenaOffset(b.hdr.IndexSize, int(b.hdr.ShardSize))
		b.arena = append(b.arena, arena)
		b.pages = append(b.pages, arena+int(binary.NativeEndian.Uint32(s.arena[slabPagesOffOff:])))
	}
	for _, group := range [][]string{k.ints, k.floats, k.bools, k.small, k.large, k.ttl, k.lists} {
		for _, key := range group {
			h := hashKey(d.seed, key)
			s := d.shardFor(h)
			off, err := s.findInShard(key, h)
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

// openSeeded creates a zone at path with o and hashSeed as its hash seed.
// A zone's hash seed is random; a test that draws it from its own seed
// puts every key in the same shard and index slot when it is replayed.
func openSeeded(t *testing.T, path string, o Options, hashSeed uint64) *Dict {
	t.Helper()
	d, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	d.Close()
	if err := fixSeed(path, hashSeed); err != nil {
		t.Fatal(err)
	}
	if d, err = Open(path, o); err != nil {
		t.Fatalf("Open(%q) after setting its hash seed = %v", path, err)
	}
	return d
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
