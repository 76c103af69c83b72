package dict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
	"golang.org/x/sys/unix"
)

// hostileSize is a small zone of 2 shards.
const hostileSize = shm.HeaderSize + 2*shm.MinShardSize

// makeDictZone creates a zone at path with a few keys and closes it.
func makeDictZone(t *testing.T, path string) {
	t.Helper()
	d, err := Open(path, Options{Size: hostileSize, Shards: 2})
	if err != nil {
		t.Fatalf("Open(create) = %v", err)
	}
	for i := 0; i < 100; i++ {
		if _, err := d.Set(fmt.Sprintf("key%d", i), Int(int64(i)), 0, 0); err != nil {
			t.Fatalf("Set = %v", err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// editZone rewrites a zone file's bytes with edit; resum recomputes the
// header checksum afterwards.
func editZone(t *testing.T, path string, resum bool, edit func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = edit(b)
	if resum {
		resumHeader(b)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenHostile(t *testing.T) {
	put32 := func(off int, v uint32) func(b []byte) []byte {
		return func(b []byte) []byte { binary.NativeEndian.PutUint32(b[off:], v); return b }
	}
	tests := []struct {
		name       string
		setup      func(t *testing.T, path string)
		want       error
		attachOnly bool // Open with Size > 0 would create the zone anew
	}{
		{name: "too small", setup: func(t *testing.T, p string) {
			os.WriteFile(p, bytes.Repeat([]byte{'x'}, 100), 0o600)
		}, want: shm.ErrNotZone},
		{name: "one byte short of a header", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { return b[:shm.HeaderSize-1] })
		}, want: shm.ErrNotZone},
		{name: "empty", setup: func(t *testing.T, p string) {
			os.WriteFile(p, nil, 0o600)
		}, want: shm.ErrNotZone, attachOnly: true},
		{name: "text file", setup: func(t *testing.T, p string) {
			os.WriteFile(p, bytes.Repeat([]byte("not a zone\n"), 20000), 0o600)
		}, want: shm.ErrNotZone},
		{name: "wrong magic", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, true, func(b []byte) []byte { b[0] = 'X'; return b })
		}, want: shm.ErrNotZone},
		{name: "other version", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, true, put32(8, shm.Version+1))
		}, want: shm.ErrVersion},
		{name: "other version, stale checksum", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, put32(8, shm.Version+1))
		}, want: shm.ErrVersion},
		{name: "other byte order", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, true, put32(12, 0x04030201))
		}, want: shm.ErrVersion},
		{name: "bad checksum", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { b[hdrChecksumOff] ^= 1; return b })
		}, want: shm.ErrCorrupt},
		{name: "field changed under the checksum", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { b[hdrSeedOff] ^= 1; return b })
		}, want: shm.ErrCorrupt},
		{name: "truncated by a page", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { return b[:len(b)-shm.PageSize] })
		}, want: shm.ErrCorrupt},
		{name: "truncated to its header", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { return b[:shm.HeaderSize] })
		}, want: shm.ErrCorrupt},
		{name: "extended", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, false, func(b []byte) []byte { return append(b, 0) })
		}, want: shm.ErrCorrupt},
		{name: "symlink to a zone", setup: func(t *testing.T, p string) {
			makeDictZone(t, p+".target")
			if err := os.Symlink(p+".target", p); err != nil {
				t.Fatal(err)
			}
		}, want: shm.ErrNotRegular},
		{name: "dangling symlink", setup: func(t *testing.T, p string) {
			if err := os.Symlink(p+".nowhere", p); err != nil {
				t.Fatal(err)
			}
		}, want: shm.ErrNotRegular},
		{name: "directory", setup: func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: shm.ErrNotRegular},
		{name: "fifo", setup: func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: shm.ErrNotRegular},
		{name: "zone of another layout", setup: func(t *testing.T, p string) {
			z, err := shm.Open(p, shm.Options{Size: hostileSize, Shards: 2, Layout: Layout + 1})
			if err != nil {
				t.Fatal(err)
			}
			z.Close()
		}, want: shm.ErrVersion},
		{name: "zone of the layout before the traces, DIC6", setup: func(t *testing.T, p string) {
			z, err := shm.Open(p, shm.Options{Size: hostileSize, Shards: 2, Layout: 0x44494336})
			if err != nil {
				t.Fatal(err)
			}
			z.Close()
		}, want: shm.ErrVersion},
		{name: "zone of no layout", setup: func(t *testing.T, p string) {
			z, err := shm.Open(p, shm.Options{Size: hostileSize, Shards: 2})
			if err != nil {
				t.Fatal(err)
			}
			z.Close()
		}, want: shm.ErrVersion},
		{name: "layout changed under the checksum", setup: func(t *testing.T, p string) {
			makeDictZone(t, p)
			editZone(t, p, true, put32(16, Layout+1))
		}, want: shm.ErrVersion},
	}
	modes := []struct {
		name string
		o    Options
	}{
		{"attach", Options{}},
		{"create", Options{Size: hostileSize, Shards: 2}},
		{"readonly", Options{ReadOnly: true}},
	}
	for _, tt := range tests {
		for _, m := range modes {
			if tt.attachOnly && m.name == "create" {
				continue
			}
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "hostile.zone")
				tt.setup(t, path)
				// Read a regular file's bytes only: reading a FIFO blocks.
				regular := func() []byte {
					if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
						return nil
					}
					b, _ := os.ReadFile(path)
					return b
				}
				before := regular()
				d, err := openBounded(t, path, m.o)
				if err == nil {
					d.Close()
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("Open(%s, %+v) = %v, want %v", tt.name, m.o, err, tt.want)
				}
				if !bytes.Equal(before, regular()) {
					t.Fatalf("failed Open(%s, %+v) changed the file", tt.name, m.o)
				}
			})
		}
	}
}

// openBounded is Open that fails the test instead of blocking for long.
func openBounded(t *testing.T, path string, o Options) (*Dict, error) {
	t.Helper()
	type result struct {
		d   *Dict
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := Open(path, o)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-time.After(time.Minute):
		t.Fatalf("Open(%s, %+v) still blocked after a minute", path, o)
		return nil, nil
	}
}

// A zone larger than the free space of its filesystem is refused before any
// byte is allocated.
func TestOpenNoSpace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.zone")
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	unit := int64(fs.Frsize)
	if unit == 0 {
		unit = int64(fs.Bsize)
	}
	if fs.Blocks == 0 {
		t.Fatalf("filesystem of %s counts no blocks; ErrNoSpace cannot be provoked safely", dir)
	}
	// Larger than the whole filesystem, so larger than any count of free
	// blocks, reserved ones included.
	size := int64(fs.Blocks)*unit + 1<<30
	const largest = shm.HeaderSize + shm.MaxShards*shm.MaxShardSize
	if size > largest {
		size = largest
	}
	shards := 1
	for (size-shm.HeaderSize)/int64(shards) > shm.MaxShardSize {
		shards *= 2
	}
	_, err := Open(path, Options{Size: size, Shards: shards})
	if !errors.Is(err, shm.ErrNoSpace) {
		t.Fatalf("Open(size %d on a filesystem of %d bytes) = %v, want ErrNoSpace", size, int64(fs.Blocks)*unit, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() != 0 {
		t.Fatalf("failed Open left a file of %d bytes", fi.Size())
	}
	// The path can still take a zone of a sensible size.
	d, err := Open(path, Options{Size: hostileSize, Shards: 2})
	if err != nil {
		t.Fatalf("Open after ErrNoSpace = %v", err)
	}
	d.Close()
}

// Corrupting one shard's bytes loses nothing in the other shards: their keys
// read back before and after the corrupt shard is repaired, the zone passes
// Check after Repair, and the repaired shard takes new keys.
func TestCorruptShardKeepsOthers(t *testing.T) {
	const (
		size   = shm.HeaderSize + 8<<20 // 16 shards of 512 KiB
		nkeys  = 20000
		victim = 5
	)
	// junk fills b with pseudo-random bytes; a lock word of junk names a
	// pid that cannot exist, so the lock is taken over, not waited for.
	junk := func(r *rand.Rand, b []byte) {
		for i := range b {
			b[i] = byte(r.Uint32() | 0x80)
		}
	}
	tests := []struct {
		name    string
		corrupt func(r *rand.Rand, shard []byte, arena int)
	}{
		{"garbage over the whole shard", func(r *rand.Rand, b []byte, _ int) { junk(r, b) }},
		{"zeros over the whole shard", func(r *rand.Rand, b []byte, _ int) { clear(b) }},
		{"garbage over the shard header", func(r *rand.Rand, b []byte, _ int) { junk(r, b[:shardHdrSize]) }},
		{"garbage over the index and the traces", func(r *rand.Rand, b []byte, arena int) { junk(r, b[indexOff:arena]) }},
		{"garbage over the slab header", func(r *rand.Rand, b []byte, arena int) { junk(r, b[arena:arena+slabClassHeads]) }},
		{"garbage over the descriptors", func(r *rand.Rand, b []byte, arena int) {
			pagesOff := int(binary.NativeEndian.Uint32(b[arena+slabPagesOffOff:]))
			junk(r, b[arena+slabClassHeads:arena+pagesOff])
		}},
		{"garbage over the entries", func(r *rand.Rand, b []byte, arena int) {
			pagesOff := int(binary.NativeEndian.Uint32(b[arena+slabPagesOffOff:]))
			junk(r, b[arena+pagesOff:])
		}},
		{"bit flips", func(r *rand.Rand, b []byte, _ int) {
			for i := 0; i < 5000; i++ {
				b[r.IntN(len(b))] ^= 1 << r.IntN(8)
			}
		}},
		{"another shard's bytes", func(r *rand.Rand, b []byte, _ int) {
			// A copy of shard victim+1 (see below): well formed, every key
			// in the wrong shard.
			copy(b, b[len(b):cap(b)])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
			path := filepath.Join(t.TempDir(), "z.zone")
			d := openSeeded(t, path, Options{Size: size}, r.Uint64())
			if len(d.shards) <= victim+1 {
				t.Fatalf("%d shards, want more than %d", len(d.shards), victim+1)
			}
			want := map[string]Value{}
			shardOf := map[string]int{}
			for i := 0; i < nkeys; i++ {
				key := fmt.Sprintf("key:%d", i)
				v := Int(int64(i))
				switch i % 10 {
				case 1:
					v = String(fmt.Sprintf("value %d", i))
				case 2:
					v = Bytes(bytes.Repeat([]byte{byte(i)}, 100+i%300))
				case 3:
					v = Float(float64(i) / 4)
				}
				if _, err := d.Set(key, v, 0, uint32(i)); err != nil {
					t.Fatalf("Set(%q) = %v", key, err)
				}
				want[key] = v
				shardOf[key] = int(hashKey(d.seed, key) & d.mask)
			}
			for i := 0; i < 50; i++ {
				key := fmt.Sprintf("list:%d", i)
				for j := 0; j < 3; j++ {
					if _, err := d.RPush(key, Int(int64(j))); err != nil {
						t.Fatalf("RPush(%q) = %v", key, err)
					}
				}
				shardOf[key] = int(hashKey(d.seed, key) & d.mask)
			}
			if st := d.Stats(); st.Evictions != 0 {
				t.Fatalf("setup evicted %d entries", st.Evictions)
			}
			hdr := d.z.Header()
			d.Close()

			editZone(t, path, false, func(b []byte) []byte {
				off := int(hdr.ShardOff) + victim*int(hdr.ShardSize)
				// The shard's bytes, with the next shard's as its capacity.
				tt.corrupt(r, b[off:off+int(hdr.ShardSize):off+2*int(hdr.ShardSize)], arenaOffset(hdr.IndexSize, int(hdr.ShardSize)))
				return b
			})

			d, err := openBounded(t, path, Options{})
			if err != nil {
				t.Fatalf("Open after corrupting shard %d = %v", victim, err)
			}
			defer d.Close()
			readBack := func(when string) {
				t.Helper()
				lost := 0
				for key, v := range want {
					got, flags, err := d.Get(key)
					if shardOf[key] == victim {
						if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIsList) {
							t.Fatalf("%s: Get(%q) in the corrupt shard = %v", when, key, err)
						}
						continue
					}
					if err != nil || !got.Equal(v) || int(flags) != keyIndex(key) {
						lost++
						if lost < 5 {
							t.Errorf("%s: Get(%q) in shard %d = %v, %d, %v, want %v, %d", when, key, shardOf[key], got, flags, err, v, keyIndex(key))
						}
					}
				}
				for i := 0; i < 50; i++ {
					key := fmt.Sprintf("list:%d", i)
					if shardOf[key] == victim {
						continue
					}
					if n, err := d.LLen(key); n != 3 || err != nil {
						lost++
						t.Errorf("%s: LLen(%q) = %d, %v, want 3", when, key, n, err)
					}
				}
				if lost > 0 {
					t.Fatalf("%s: %d keys of sound shards lost", when, lost)
				}
			}
			readBack("before Repair")
			if _, err := d.Repair(); err != nil {
				t.Fatalf("Repair = %v", err)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check after Repair = %v", err)
			}
			readBack("after Repair")
			// The repaired shard takes new keys.
			added := 0
			for i := 0; added < 100; i++ {
				key := fmt.Sprintf("new:%d", i)
				if hashKey(d.seed, key)&d.mask != victim {
					continue
				}
				if _, err := d.Set(key, Int(int64(i)), 0, 0); err != nil {
					t.Fatalf("Set(%q) in the repaired shard = %v", key, err)
				}
				if got, _, err := d.Get(key); err != nil || got.Int() != int64(i) {
					t.Fatalf("Get(%q) in the repaired shard = %v, %v, want %d", key, got, err, i)
				}
				added++
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check after new keys = %v", err)
			}
		})
	}
}

// TestCorruptSlabHeaderEveryShard flips one bit of the slab header's magic
// in every shard of a zone, of one shard and of four: a read-only Open
// refuses the zone with ErrCorrupt, and a writable Open rebuilds each
// header from the zone's geometry and the shard's page descriptors, so that
// every key is there again and the zone checks sound. A writable Open once
// rebuilt a shard only while another shard's header was sound, so one
// flipped bit made a zone of one shard unusable, its keys unreadable even
// to a dump, and shmctl check --repair could not open it either.
func TestCorruptSlabHeaderEveryShard(t *testing.T) {
	for _, shards := range []int{1, 4} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "z.zone")
			d, err := Open(path, Options{Size: shm.HeaderSize + int64(shards)*256<<10, Shards: shards})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int64{}
			for i := 0; i < 500; i++ {
				k := fmt.Sprintf("key:%d", i)
				if _, err := d.Set(k, Int(int64(i)), 0, 0); err != nil {
					t.Fatalf("Set(%q) = %v", k, err)
				}
				want[k] = int64(i)
			}
			hdr := d.z.Header()
			d.Close()
			editZone(t, path, false, func(b []byte) []byte {
				for i := 0; i < shards; i++ {
					b[int(hdr.ShardOff)+i*int(hdr.ShardSize)+arenaOffset(hdr.IndexSize, int(hdr.ShardSize))] ^= 1 // the slab magic's first byte
				}
				return b
			})
			if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open read-only = %v, want %v", err, ErrCorrupt)
			}
			d, err = openBounded(t, path, Options{})
			if err != nil {
				t.Fatalf("Open with every shard's slab header corrupt = %v", err)
			}
			defer d.Close()
			if st := d.Stats(); st.Recoveries != uint64(shards) {
				t.Errorf("Stats().Recoveries = %d, want %d, one per shard", st.Recoveries, shards)
			}
			for k, n := range want {
				if v, _, err := d.Get(k); err != nil || v.Int() != n {
					t.Errorf("Get(%q) = %v, %v, want %d", k, v, err, n)
				}
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check = %v", err)
			}
		})
	}
}

// keyIndex returns i of "key:i".
func keyIndex(key string) int {
	var i int
	fmt.Sscanf(key, "key:%d", &i)
	return i
}
