package shm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// smallSize is a zone of two minimal shards.
const smallSize = HeaderSize + 2*MinShardSize

var small = Options{Size: smallSize, Shards: 2}

func tempZone(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.zone")
}

// mustOpen opens path and closes the zone when the test ends.
func mustOpen(t *testing.T, path string, o Options) *Zone {
	t.Helper()
	z, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%s, %+v) = %v, want nil", path, o, err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// makeZone creates a small zone at path and returns its file bytes.
func makeZone(t *testing.T, path string) []byte {
	t.Helper()
	z, err := Open(path, small)
	if err != nil {
		t.Fatalf("Open(%s, small) = %v", path, err)
	}
	if err := z.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	return readFile(t, path)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// umask reads the process's umask without changing it.
func umask(t *testing.T) os.FileMode {
	t.Helper()
	b := readFile(t, "/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			return os.FileMode(m)
		}
	}
	t.Fatal("no Umask in /proc/self/status")
	return 0
}

func TestOpenCreateAttach(t *testing.T) {
	mask := umask(t)
	tests := []struct {
		name string
		perm os.FileMode
		want os.FileMode
	}{
		{"default", 0, 0o600},
		{"0640", 0o640, 0o640},
		{"0604", 0o604, 0o604},
		{"0400", 0o400, 0o400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempZone(t)
			before := time.Now().UnixMilli()
			o := Options{Size: smallSize, Shards: 2, Perm: tt.perm, Layout: 0xabc}
			z := mustOpen(t, path, o)
			after := time.Now().UnixMilli()
			if !z.Created() {
				t.Fatalf("Open(absent).Created() = false, want true")
			}
			if z.ReadOnly() || z.Path() != path {
				t.Fatalf("ReadOnly(), Path() = %v, %q, want false, %q", z.ReadOnly(), z.Path(), path)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fi.Mode(), tt.want&^mask; got != want {
				t.Fatalf("mode = %v, want %v", got, want)
			}
			if fi.Size() != smallSize {
				t.Fatalf("file size = %d, want %d", fi.Size(), smallSize)
			}
			h := z.Header()
			want := Header{
				Version: Version, Layout: 0xabc, PageSize: PageSize, Size: smallSize,
				Shards: 2, IndexSize: 1024, ShardOff: HeaderSize, ShardSize: MinShardSize,
				Seed: h.Seed, Clock: ClockUnixMs, CreatedAt: h.CreatedAt,
			}
			if h != want {
				t.Fatalf("Header() = %+v, want %+v", h, want)
			}
			if h.CreatedAt < before || h.CreatedAt > after {
				t.Fatalf("CreatedAt = %d, want in [%d, %d]", h.CreatedAt, before, after)
			}
			if len(z.Bytes()) != smallSize {
				t.Fatalf("len(Bytes()) = %d, want %d", len(z.Bytes()), smallSize)
			}
			if tt.perm&0o200 == 0 {
				return // the owner may not reopen it read-write; root may, others may not
			}

			// Attach: by size 0, by the same size, and by another size.
			for _, o := range []Options{{}, o, {Size: 4 * smallSize, Layout: 0xabc}} {
				z2 := mustOpen(t, path, o)
				if z2.Created() {
					t.Fatalf("second Open(%+v).Created() = true, want false", o)
				}
				if z2.Header() != h {
					t.Fatalf("second Open(%+v).Header() = %+v, want %+v", o, z2.Header(), h)
				}
				// Both map the same bytes.
				s1, s2 := z.Shard(1), z2.Shard(1)
				s1[100]++
				if s2[100] != s1[100] {
					t.Fatalf("write through one mapping not seen through the other")
				}
			}
		})
	}
}

func TestOpenSizeRounding(t *testing.T) {
	tests := []struct {
		size   int64
		shards int
		want   int64
	}{
		{smallSize, 2, smallSize},
		{smallSize + PageSize - 1, 2, smallSize},
		{smallSize + PageSize, 2, smallSize},
		{smallSize + 2*PageSize, 2, smallSize + 2*PageSize},
		{HeaderSize + MinShardSize + 5, 1, HeaderSize + MinShardSize},
		{1 << 20, 0, HeaderSize + 255*PageSize},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("size=%d/shards=%d", tt.size, tt.shards), func(t *testing.T) {
			path := tempZone(t)
			z := mustOpen(t, path, Options{Size: tt.size, Shards: tt.shards})
			if z.Header().Size != tt.want {
				t.Fatalf("Header().Size = %d, want %d", z.Header().Size, tt.want)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != tt.want {
				t.Fatalf("file size = %d, want %d", fi.Size(), tt.want)
			}
			h := z.Header()
			if got := h.ShardOff + int64(h.Shards)*h.ShardSize; got != tt.want {
				t.Fatalf("shards end at %d, want %d", got, tt.want)
			}
			for i := 0; i < h.Shards; i++ {
				if got := int64(len(z.Shard(i))); got != h.ShardSize {
					t.Fatalf("len(Shard(%d)) = %d, want %d", i, got, h.ShardSize)
				}
			}
		})
	}
}

// writeFaults reports whether writing b[0] faults.
func writeFaults(b []byte) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { faulted = recover() != nil }()
	b[0] = 1
	return false
}

func TestOpenReadOnly(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		path := tempZone(t)
		_, err := Open(path, Options{Size: smallSize, ReadOnly: true})
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open(absent, ReadOnly, Size) = %v, want os.ErrNotExist", err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read-only Open created %s: Lstat = %v", path, err)
		}
	})
	t.Run("empty", func(t *testing.T) {
		path := tempZone(t)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, Options{Size: smallSize, ReadOnly: true})
		if !errors.Is(err, ErrNotZone) {
			t.Fatalf("Open(empty, ReadOnly, Size) = %v, want ErrNotZone", err)
		}
		if b := readFile(t, path); len(b) != 0 {
			t.Fatalf("read-only Open wrote %d bytes", len(b))
		}
	})
	t.Run("existing", func(t *testing.T) {
		path := tempZone(t)
		orig := makeZone(t, path)
		rw := mustOpen(t, path, Options{})
		z := mustOpen(t, path, Options{ReadOnly: true, Size: 8 * smallSize})
		if !z.ReadOnly() || z.Created() {
			t.Fatalf("ReadOnly(), Created() = %v, %v, want true, false", z.ReadOnly(), z.Created())
		}
		if z.Header() != rw.Header() {
			t.Fatalf("read-only Header() = %+v, want %+v", z.Header(), rw.Header())
		}
		if !bytes.Equal(z.Bytes(), orig) {
			t.Fatalf("read-only mapping differs from the file")
		}
		if !writeFaults(z.Shard(0)) {
			t.Fatalf("write to a read-only mapping did not fault")
		}
		rw.Shard(0)[8] = 42 // a writer's change is visible to the reader
		if z.Shard(0)[8] != 42 {
			t.Fatalf("read-only mapping does not see a writer's change")
		}
		rw.Shard(0)[8] = 0
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readFile(t, path), orig) {
			t.Fatalf("file changed by a read-only Open")
		}
	})
}

func TestPath(t *testing.T) {
	tests := []struct {
		name, dir, want string
	}{
		{"counters", "", "/dev/shm/counters.zone"},
		{"counters", "/tmp/zones", "/tmp/zones/counters.zone"},
		{"a.zone", "/x", "/x/a.zone.zone"},
		{"./counters", "/x", "./counters"},
		{"/var/lib/z", "/x", "/var/lib/z"},
		{"dir/z", "/x", "dir/z"},
		{"z/", "/x", "z/"},
		{".", "/x", "."},
		{"..", "/x", ".."},
	}
	for _, tt := range tests {
		t.Run(tt.name+"@"+tt.dir, func(t *testing.T) {
			t.Setenv("SHMZONE_DIR", tt.dir)
			if got := Path(tt.name); got != tt.want {
				t.Fatalf("Path(%q) with SHMZONE_DIR=%q = %q, want %q", tt.name, tt.dir, got, tt.want)
			}
		})
	}
}

// snapshot describes what is at path without opening anything but a regular
// file (reading a FIFO would block): its type, and a regular file's bytes.
func snapshot(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	if !fi.Mode().IsRegular() {
		return fi.Mode().String()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return fi.Mode().String() + ":" + string(b)
}

// rewriteHeader applies f to the zone file's header and, when resumIt,
// recomputes its checksum.
func rewriteHeader(t *testing.T, path string, resumIt bool, f func(b []byte)) {
	t.Helper()
	b := readFile(t, path)
	f(b)
	if resumIt {
		resum(b)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenHostile(t *testing.T) {
	const attachOnly = 1 // the case cannot run with Size > 0
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		o     Options
		only  int
		want  error
	}{
		{name: "absent", setup: func(*testing.T, string) {}, only: attachOnly, want: os.ErrNotExist},
		{name: "empty", setup: func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) }, only: attachOnly, want: ErrNotZone},
		{name: "100 bytes", setup: func(t *testing.T, p string) { os.WriteFile(p, bytes.Repeat([]byte("x"), 100), 0o600) }, want: ErrNotZone},
		{name: "text file", setup: func(t *testing.T, p string) {
			os.WriteFile(p, bytes.Repeat([]byte("hello, zone\n"), 20000), 0o600)
		}, want: ErrNotZone},
		{name: "wrong magic", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { copy(b, "SHMZONF\x00") })
		}, want: ErrNotZone},
		{name: "other version", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint32(b[8:], Version+1) })
		}, want: ErrVersion},
		{name: "other byte order", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint32(b[12:], 0x04030201) })
		}, want: ErrVersion},
		{name: "wrong layout", setup: func(t *testing.T, p string) { makeZone(t, p) }, o: Options{Layout: 7}, want: ErrVersion},
		{name: "bad checksum", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, false, func(b []byte) { b[48] ^= 0x20 })
		}, want: ErrCorrupt},
		{name: "flipped checksum", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, false, func(b []byte) { b[checksumOff+7] ^= 0x80 })
		}, want: ErrCorrupt},
		{name: "truncated", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			if err := os.Truncate(p, smallSize-PageSize); err != nil {
				t.Fatal(err)
			}
		}, want: ErrCorrupt},
		{name: "truncated to header page", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			os.Truncate(p, HeaderSize)
		}, want: ErrCorrupt},
		{name: "truncated into header page", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			os.Truncate(p, 2000)
		}, want: ErrNotZone},
		{name: "extended", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			os.Truncate(p, smallSize+1)
		}, want: ErrCorrupt},
		{name: "shards not power of two", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint32(b[32:], 3) })
		}, want: ErrCorrupt},
		{name: "shard size not page multiple", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint64(b[48:], MinShardSize+512) })
		}, want: ErrCorrupt},
		{name: "size lies", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint64(b[24:], 2*smallSize) })
		}, want: ErrCorrupt},
		{name: "geometry lies consistently", setup: func(t *testing.T, p string) {
			// one shard of twice the size: consistent in itself, not with the file
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) {
				nativeOrder.PutUint32(b[32:], 1)
				nativeOrder.PutUint64(b[48:], 4*MinShardSize)
				nativeOrder.PutUint64(b[24:], HeaderSize+4*MinShardSize)
			})
		}, want: ErrCorrupt},
		{name: "symlink to zone", setup: func(t *testing.T, p string) {
			target := p + ".target"
			makeZone(t, target)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, want: ErrNotRegular},
		{name: "dangling symlink", setup: func(t *testing.T, p string) {
			if err := os.Symlink(p+".nowhere", p); err != nil {
				t.Fatal(err)
			}
		}, want: ErrNotRegular},
		{name: "directory", setup: func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: ErrNotRegular},
		{name: "fifo", setup: func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: ErrNotRegular},
		{name: "socket", setup: func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}, want: ErrNotRegular},
		{name: "symlink to device", setup: func(t *testing.T, p string) {
			if err := os.Symlink("/dev/null", p); err != nil {
				t.Fatal(err)
			}
		}, want: ErrNotRegular},
	}
	modes := []struct {
		name string
		o    Options
	}{
		{"attach", Options{}},
		{"create", Options{Size: smallSize, Shards: 2}},
		{"readonly", Options{ReadOnly: true}},
	}
	for _, tt := range tests {
		for _, m := range modes {
			if tt.only == attachOnly && m.name == "create" {
				continue
			}
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				path := tempZone(t)
				tt.setup(t, path)
				before := snapshot(path)
				o := m.o
				o.Layout = tt.o.Layout
				done := make(chan error, 1)
				go func() {
					z, err := Open(path, o)
					if err == nil {
						z.Close()
					}
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("Open(%s, %+v) still blocked after 10s", tt.name, o)
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("Open(%s, %+v) = %v, want %v", tt.name, o, err, tt.want)
				}
				if after := snapshot(path); after != before {
					t.Fatalf("Open(%s, %+v) changed the file: %.80q, was %.80q", tt.name, o, after, before)
				}
			})
		}
	}
}

func TestOpenDevice(t *testing.T) {
	for _, o := range []Options{{}, small, {ReadOnly: true}} {
		if _, err := Open("/dev/null", o); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(/dev/null, %+v) = %v, want ErrNotRegular", o, err)
		}
	}
}

func TestOpenBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"negative size", Options{Size: -1}},
		{"negative size read-only", Options{Size: -1, ReadOnly: true}},
		{"shards 3", Options{Size: 1 << 20, Shards: 3}},
		{"shards too many", Options{Size: 1 << 20, Shards: 2 * MaxShards}},
		{"below minimum", Options{Size: HeaderSize + MinShardSize - 1}},
		{"one byte", Options{Size: 1}},
		{"shards too small", Options{Size: smallSize, Shards: 4}},
		{"mode with type bits", Options{Size: smallSize, Perm: os.ModeDir | 0o600}},
		{"mode setuid", Options{Size: smallSize, Perm: os.ModeSetuid | 0o600}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempZone(t)
			_, err := Open(path, tt.o)
			if !errors.Is(err, ErrBadOptions) {
				t.Fatalf("Open(%+v) = %v, want ErrBadOptions", tt.o, err)
			}
			if b, err := os.ReadFile(path); err == nil && len(b) != 0 {
				t.Fatalf("Open(%+v) left %d bytes", tt.o, len(b))
			}
			// The path can still be made a zone.
			z := mustOpen(t, path, small)
			if !z.Created() {
				t.Fatalf("Open after ErrBadOptions: Created() = false, want true")
			}
		})
	}
}

// An all-zero header with Size > 0 is a creator that died before it wrote the
// header: the zone is formatted anew.
func TestOpenBlankHeader(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"zeroed header", func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, false, func(b []byte) { clear(b[:hdrSize]) })
		}},
		{"zeroed header page", func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, false, func(b []byte) { clear(b[:HeaderSize]) })
		}},
		{"fallocated zeros", func(t *testing.T, p string) {
			os.WriteFile(p, nil, 0o600)
			os.Truncate(p, 3*smallSize)
		}},
		{"exactly a header of zeros", func(t *testing.T, p string) {
			os.WriteFile(p, make([]byte, hdrSize), 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempZone(t)
			tt.setup(t, path)
			before := readFile(t, path)
			if _, err := Open(path, Options{}); !errors.Is(err, ErrNotZone) {
				t.Fatalf("Open(blank, Size 0) = %v, want ErrNotZone", err)
			}
			if _, err := Open(path, Options{ReadOnly: true, Size: smallSize}); !errors.Is(err, ErrNotZone) {
				t.Fatalf("Open(blank, ReadOnly) = %v, want ErrNotZone", err)
			}
			if !bytes.Equal(before, readFile(t, path)) {
				t.Fatalf("Open without create changed a blank file")
			}
			z := mustOpen(t, path, small)
			if !z.Created() {
				t.Fatalf("Open(blank, Size>0).Created() = false, want true")
			}
			if fi, _ := os.Stat(path); fi.Size() != smallSize {
				t.Fatalf("file size = %d, want %d", fi.Size(), smallSize)
			}
			z2 := mustOpen(t, path, Options{})
			if z2.Header() != z.Header() {
				t.Fatalf("reattached Header() = %+v, want %+v", z2.Header(), z.Header())
			}
		})
	}
}

// largestZone is the largest size Geometry accepts.
const largestZone = HeaderSize + MaxShards*MaxShardSize

func TestOpenNoSpace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.zone")
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	unit := fs.Frsize
	if unit == 0 {
		unit = fs.Bsize
	}
	if fs.Blocks == 0 {
		// tmpfs without a size limit: a fallocate too large for memory
		// would take memory until it fails. Refuse rather than risk it.
		t.Fatalf("filesystem of %s counts no blocks; ErrNoSpace cannot be provoked safely", dir)
	}
	free := int64(fs.Bavail) * unit
	size := free + 1<<30
	if size > largestZone {
		// More free space than any zone: the largest zone fails with EFBIG
		// on ext4 (16 TiB files at most) before it allocates anything.
		size = largestZone
	}
	shards := 1
	for (size-HeaderSize)/int64(shards) > MaxShardSize {
		shards *= 2
	}
	_, err := Open(path, Options{Size: size, Shards: shards})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Open(size %d, %d free) = %v, want ErrNoSpace", size, free, err)
	}
	if b, err := os.ReadFile(path); err == nil && len(b) != 0 {
		t.Fatalf("failed Open left a file of %d bytes", len(b))
	}
	z := mustOpen(t, path, small)
	if !z.Created() || z.Header().Size != smallSize {
		t.Fatalf("Open after ErrNoSpace: Created() %v, Size %d, want true, %d", z.Created(), z.Header().Size, smallSize)
	}
}

func TestOpenFormat(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		path := tempZone(t)
		calls := 0
		o := small
		o.Format = func(z *Zone) error {
			calls++
			if !z.Created() {
				t.Errorf("Format: Created() = false")
			}
			h := z.Header()
			if h.Shards != 2 || h.ShardSize != MinShardSize {
				t.Errorf("Format: Header() = %+v, want 2 shards of %d", h, MinShardSize)
			}
			if !isBlankHeader(z.Bytes()) {
				t.Errorf("Format: header already written")
			}
			for i := 0; i < h.Shards; i++ {
				copy(z.Shard(i), fmt.Sprintf("shard %d", i))
			}
			return nil
		}
		z := mustOpen(t, path, o)
		if calls != 1 {
			t.Fatalf("Format called %d times, want 1", calls)
		}
		z2 := mustOpen(t, path, o)
		if calls != 1 {
			t.Fatalf("Format called on attach")
		}
		for i := 0; i < 2; i++ {
			if got, want := string(z2.Shard(i)[:7]), fmt.Sprintf("shard %d", i); got != want {
				t.Fatalf("Shard(%d) = %q, want %q", i, got, want)
			}
		}
		if z.Header() != z2.Header() {
			t.Fatalf("Header() = %+v, want %+v", z2.Header(), z.Header())
		}
	})
	t.Run("error", func(t *testing.T) {
		path := tempZone(t)
		errFormat := errors.New("format failed")
		o := small
		o.Format = func(z *Zone) error {
			copy(z.Shard(0), "half")
			return errFormat
		}
		if _, err := Open(path, o); !errors.Is(err, errFormat) {
			t.Fatalf("Open with failing Format = %v, want %v", err, errFormat)
		}
		if b := readFile(t, path); len(b) != 0 {
			t.Fatalf("failed Format left %d bytes", len(b))
		}
		if _, err := Open(path, Options{}); !errors.Is(err, ErrNotZone) {
			t.Fatalf("Open after failed Format = %v, want ErrNotZone", err)
		}
		z := mustOpen(t, path, small)
		if !z.Created() {
			t.Fatalf("Open after failed Format: Created() = false, want true")
		}
		if string(z.Shard(0)[:4]) == "half" {
			t.Fatalf("new zone keeps the failed Format's bytes")
		}
	})
}

func TestClose(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	for i := 0; i < 2; i++ {
		if err := z.Close(); err != nil {
			t.Fatalf("Close #%d = %v, want nil", i+1, err)
		}
	}
	if z.Bytes() != nil {
		t.Fatalf("Bytes() after Close has %d bytes, want nil", len(z.Bytes()))
	}
}

func TestWordAccess(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	b := z.Shard(1)
	w := Word32(b, 8)
	*w = 0x01020304
	if got := nativeOrder.Uint32(b[8:]); got != 0x01020304 {
		t.Fatalf("Word32 wrote %#x, want 0x01020304", got)
	}
	d := Word64(b, 16)
	*d = 1 << 40
	if got := nativeOrder.Uint64(b[16:]); got != 1<<40 {
		t.Fatalf("Word64 wrote %#x, want 1<<40", got)
	}
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"Word32 misaligned", func() { Word32(b, 2) }},
		{"Word32 past end", func() { Word32(b, len(b)-2) }},
		{"Word32 negative", func() { Word32(b, -4) }},
		{"Word64 misaligned", func() { Word64(b, 4) }},
		{"Word64 past end", func() { Word64(b, len(b)-4) }},
		{"Shard out of range", func() { z.Shard(2) }},
	} {
		if !panics(tt.f) {
			t.Errorf("%s did not panic", tt.name)
		}
	}
}

func TestOpenConcurrentGoroutines(t *testing.T) {
	path := tempZone(t)
	const n = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		zones [n]*Zone
		errs  [n]error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			zones[i], errs[i] = Open(path, small)
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: Open = %v", i, errs[i])
		}
		defer zones[i].Close()
		if zones[i].Created() {
			created++
		}
		if zones[i].Header() != zones[0].Header() {
			t.Fatalf("goroutine %d: Header() = %+v, want %+v", i, zones[i].Header(), zones[0].Header())
		}
	}
	if created != 1 {
		t.Fatalf("%d Opens report Created, want 1", created)
	}
}

// Helper processes: the test binary re-executed with SHM_HELPER=1 runs
// TestHelperProcess, which does what its arguments say and exits.

func helperCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "SHM_HELPER=1")
	cmd.Stderr = os.Stderr
	return cmd
}

func TestHelperProcess(t *testing.T) {
	if os.Getenv("SHM_HELPER") != "1" {
		return
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if len(args) < 3 {
		fmt.Fprintf(os.Stderr, "helper: bad arguments %q\n", os.Args)
		os.Exit(2)
	}
	os.Exit(helperMain(args[1], args[2], args[3:]))
}

func helperMain(verb, path string, args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", verb, err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	switch verb {
	case "open": // wait for a line on stdin, Open with Size, report
		if _, err := in.ReadString('\n'); err != nil {
			return fail(err)
		}
		z, err := Open(path, small)
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		fmt.Printf("created=%v seed=%d size=%d\n", z.Created(), z.Header().Seed, z.Header().Size)
		return 0
	case "lock": // take shard 0's first word, say so, wait to be killed
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		r := Lock(Word64(z.Shard(0), 0))
		fmt.Printf("locked %d %d\n", Self, r)
		io.Copy(io.Discard, in)
		return 0
	case "incr": // add 1 to shard 0's counter n times under its lock
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return fail(err)
		}
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		if _, err := in.ReadString('\n'); err != nil {
			return fail(err)
		}
		w, b := Word64(z.Shard(0), 0), z.Shard(0)
		for i := 0; i < n; i++ {
			Lock(w)
			plainIncr(b[64:])
			Unlock(w)
		}
		return 0
	}
	return fail(fmt.Errorf("unknown verb"))
}

// plainIncr adds 1 to the counter at b[0:8] with plain loads and stores: only
// a lock makes it exact.
func plainIncr(b []byte) {
	nativeOrder.PutUint64(b, nativeOrder.Uint64(b)+1)
}

func TestOpenConcurrentProcesses(t *testing.T) {
	path := tempZone(t)
	const n = 4
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   bytes.Buffer
	}
	var children [n]child
	for i := range children {
		c := &children[i]
		c.cmd = helperCommand(t, "open", path)
		c.cmd.Stdout = &c.out
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range children { // start them together
		io.WriteString(children[i].stdin, "go\n")
	}
	created := 0
	var first string
	for i := range children {
		c := &children[i]
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		var cr bool
		var seed uint64
		var size int64
		line := c.out.String()
		if _, err := fmt.Sscanf(line, "created=%t seed=%d size=%d", &cr, &seed, &size); err != nil {
			t.Fatalf("child %d said %q: %v", i, line, err)
		}
		if cr {
			created++
		}
		rest := fmt.Sprintf("seed=%d size=%d", seed, size)
		if first == "" {
			first = rest
		} else if rest != first {
			t.Fatalf("child %d: %s, want %s", i, rest, first)
		}
	}
	if created != 1 {
		t.Fatalf("%d processes report Created, want 1", created)
	}
	z := mustOpen(t, path, Options{})
	if got := fmt.Sprintf("seed=%d size=%d", z.Header().Seed, z.Header().Size); got != first {
		t.Fatalf("parent sees %s, children %s", got, first)
	}
}
