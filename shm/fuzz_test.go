package shm

import (
	"bytes"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"testing"
)

// headerSeeds returns a valid header page and corrupted copies of it.
func headerSeeds() [][]byte {
	valid := encoded(testHeader())
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(valid)
		f(b)
		return b
	}
	return [][]byte{
		valid,
		valid[:hdrSize],
		mut(func(b []byte) { b[0] = 'X' }), // magic
		mut(func(b []byte) { nativeOrder.PutUint32(b[8:], 2); resum(b) }),           // version
		mut(func(b []byte) { nativeOrder.PutUint32(b[12:], 0x04030201); resum(b) }), // byte order
		mut(func(b []byte) { b[50] ^= 1 }),                                          // checksum
		mut(func(b []byte) { nativeOrder.PutUint32(b[32:], 3); resum(b) }),          // shards
		mut(func(b []byte) { nativeOrder.PutUint64(b[48:], 1<<63); resum(b) }),      // shard size
		mut(func(b []byte) { nativeOrder.PutUint32(b[36:], 1<<31); resum(b) }),      // index size
		mut(func(b []byte) { nativeOrder.PutUint64(b[24:], 1<<63); resum(b) }),      // size
		make([]byte, HeaderSize),
		nil,
	}
}

func FuzzParseHeader(f *testing.F) {
	h := testHeader()
	for _, b := range headerSeeds() {
		f.Add(b, h.Size, h.Layout)
	}
	f.Add(encoded(h), int64(-1), uint32(0))
	f.Add(encoded(h), h.Size+1, uint32(0))
	f.Fuzz(func(t *testing.T, b []byte, fileSize int64, layout uint32) {
		got, err := parseHeader(b, fileSize, layout)
		if err != nil {
			if !errors.Is(err, ErrNotZone) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("parseHeader = %v, want ErrNotZone, ErrVersion or ErrCorrupt", err)
			}
			if got != (Header{}) {
				t.Fatalf("parseHeader returned %+v with error %v", got, err)
			}
			return
		}
		checkHeader(t, got, fileSize)
		if layout != 0 && got.Layout != layout {
			t.Fatalf("parseHeader accepted layout %#x, asked for %#x", got.Layout, layout)
		}
		again, err := parseHeader(encoded(got), fileSize, layout)
		if err != nil || again != got {
			t.Fatalf("re-encoded header parses as %+v, %v, want %+v", again, err, got)
		}
	})
}

// checkHeader fails unless h describes a zone of fileSize bytes whose shards
// lie inside it.
func checkHeader(t *testing.T, h Header, fileSize int64) {
	t.Helper()
	if h.Size != fileSize || h.Version != Version || h.ShardOff != HeaderSize ||
		h.Shards < 1 || bits.OnesCount(uint(h.Shards)) != 1 ||
		h.ShardSize < MinShardSize || h.ShardSize%ShardAlign != 0 ||
		h.ShardOff+int64(h.Shards)*h.ShardSize != h.Size {
		t.Fatalf("accepted header %+v for a file of %d bytes", h, fileSize)
	}
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	valid := filepath.Join(dir, "valid.zone")
	z, err := Open(valid, Options{Size: HeaderSize + MinShardSize})
	if err != nil {
		f.Fatal(err)
	}
	z.Close()
	file, err := os.ReadFile(valid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(file, false)
	f.Add(file, true)
	for _, b := range headerSeeds() {
		f.Add(b, false)
		f.Add(append(b, make([]byte, MinShardSize)...), true)
	}
	f.Add(file[:HeaderSize+MinShardSize/2], false)
	f.Add([]byte("SHMZONE\x00"), true)
	f.Fuzz(func(t *testing.T, data []byte, create bool) {
		path := filepath.Join(t.TempDir(), "fuzz.zone")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		o := Options{}
		if create {
			o = Options{Size: HeaderSize + MinShardSize}
		}
		z, err := Open(path, o)
		if err != nil {
			if !errors.Is(err, ErrNotZone) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrNotZone, ErrVersion or ErrCorrupt", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Fatalf("failed Open changed the file")
			}
			return
		}
		defer z.Close()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		checkHeader(t, z.Header(), fi.Size())
		if int64(len(z.data)) != fi.Size() {
			t.Fatalf("mapped %d bytes of a %d-byte file", len(z.data), fi.Size())
		}
		h := z.Header()
		last := z.Shard(h.Shards - 1)
		_ = last[len(last)-1] // the whole last shard is mapped
		if z.Created() != (create && (len(data) == 0 || isMarker(data, int64(len(data))))) {
			t.Fatalf("Created() = %v for a file of %d bytes", z.Created(), len(data))
		}
	})
}
