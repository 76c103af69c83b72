package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Tests of Open creating and attaching zones: sizes, permissions, read-only
// mappings, options refused, a full disk, Format, Close and word access.

func TestOpenCreateAttach(t *testing.T) {
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
			if got, want := fi.Mode(), tt.want; got != want { // the umask does not apply
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
			if len(z.data) != smallSize {
				t.Fatalf("mapped %d bytes, want %d", len(z.data), smallSize)
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

// Under umask 0777 a zone still gets the mode asked for, not 0000.
func TestOpenUmask(t *testing.T) {
	path := tempZone(t)
	out := runHelper(t, "umask-create", path)
	if got := strings.TrimSpace(out); got != "mode=-rw-r-----" {
		t.Fatalf("helper under umask 0777 said %q, want mode=-rw-r-----", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o640 {
		t.Fatalf("zone created under umask 0777: %v, %v; want mode 0640", fi, err)
	}
}

func TestOpenSizeRounding(t *testing.T) {
	tests := []struct {
		size   int64
		shards int
		want   int64
	}{
		{smallSize, 2, smallSize},
		{smallSize + 2*PageSize - 1, 2, smallSize},
		{smallSize + 2*PageSize, 2, smallSize + 2*PageSize},
		{smallSize + 2*ShardAlign, 2, smallSize},
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
		makeZone(t, path)
		rw := mustOpen(t, path, Options{})
		orig := readFile(t, path) // once rw holds its owner slot
		z := mustOpen(t, path, Options{ReadOnly: true, Size: 8 * smallSize})
		if !z.ReadOnly() || z.Created() {
			t.Fatalf("ReadOnly(), Created() = %v, %v, want true, false", z.ReadOnly(), z.Created())
		}
		if z.Header() != rw.Header() {
			t.Fatalf("read-only Header() = %+v, want %+v", z.Header(), rw.Header())
		}
		if !bytes.Equal(z.data, orig) {
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
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open(%+v) left a file: Lstat = %v", tt.o, err)
			}
			// The path can still be made a zone.
			z := mustOpen(t, path, small)
			if !z.Created() {
				t.Fatalf("Open after ErrBadOptions: Created() = false, want true")
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
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed Open left the file it created: Lstat = %v", err)
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
			if !isMarker(z.data, int64(len(z.data))) {
				t.Errorf("Format: the header holds %.8q, want the marker of an unfinished creation", z.data)
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
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("failed Format left the file it created: Lstat = %v", err)
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
	if z.data != nil {
		t.Fatalf("mapping after Close has %d bytes, want nil", len(z.data))
	}
}

func TestWordAccess(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	b := z.Shard(1)
	d := word64(b, 16)
	*d = 1 << 40
	if got := nativeOrder.Uint64(b[16:]); got != 1<<40 {
		t.Fatalf("word64 wrote %#x, want 1<<40", got)
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
		{"word64 misaligned", func() { word64(b, 4) }},
		{"word64 past end", func() { word64(b, len(b)-4) }},
		{"word64 negative", func() { word64(b, -8) }},
		{"Shard out of range", func() { z.Shard(2) }},
	} {
		if !panics(tt.f) {
			t.Errorf("%s did not panic", tt.name)
		}
	}
}
