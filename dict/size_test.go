package dict_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/dict"
)

// TestOpenSize checks that Open attaches a zone with Size 0 or the size it
// was created with, and refuses any other size with ErrSizeMismatch.
func TestOpenSize(t *testing.T) {
	tests := []struct {
		name     string
		create   int64 // Size the zone is created with
		shards   int   // Shards it is created with
		open     int64 // Size it is opened with
		readOnly bool
		wantErr  bool
	}{
		{name: "size 0", create: 1 << 20, open: 0},
		{name: "same size", create: 1 << 20, open: 1 << 20},
		{name: "odd size", create: 1<<20 + 12345, open: 1<<20 + 12345},
		{name: "odd size, many shards", create: 3<<20 + 777, shards: 8, open: 3<<20 + 777},
		{name: "odd size, chosen shards", create: 5<<20 + 99, open: 5<<20 + 99},
		{name: "size in force", create: 1<<20 + 12345, open: -1},
		{name: "larger", create: 1 << 20, open: 2 << 20, wantErr: true},
		{name: "smaller", create: 2 << 20, open: 1 << 20, wantErr: true},
		{name: "below the minimum", create: 1 << 20, open: 100, wantErr: true},
		{name: "read-only size 0", create: 1 << 20, open: 0, readOnly: true},
		{name: "read-only same size", create: 1 << 20, open: 1 << 20, readOnly: true},
		{name: "read-only larger", create: 1 << 20, open: 2 << 20, readOnly: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "z.zone")
			c, err := dict.Open(path, dict.Options{Size: tt.create, Shards: tt.shards})
			if err != nil {
				t.Fatalf("Open(Size %d) = %v", tt.create, err)
			}
			size := c.Size()
			if size > tt.create || size != c.Header().Size {
				t.Fatalf("Size() = %d, want at most %d and the header's %d", size, tt.create, c.Header().Size)
			}
			c.Close()
			open := tt.open
			if open < 0 {
				open = size
			}
			d, err := dict.Open(path, dict.Options{Size: open, ReadOnly: tt.readOnly})
			if tt.wantErr {
				if d != nil {
					d.Close()
				}
				if !errors.Is(err, dict.ErrSizeMismatch) {
					t.Fatalf("Open(Size %d) of a zone of %d bytes = %v, want ErrSizeMismatch", open, size, err)
				}
				checkSizeError(t, err, path, size, open)
				return
			}
			if err != nil {
				t.Fatalf("Open(Size %d) of a zone of %d bytes = %v, want nil", open, size, err)
			}
			defer d.Close()
			if got := d.Size(); got != size {
				t.Errorf("Size() = %d, want %d", got, size)
			}
		})
	}
}

// checkSizeError checks that err names the zone's path, its size, the size
// asked for, and a shmctl command line that resizes the zone.
func checkSizeError(t *testing.T, err error, path string, size, asked int64) {
	t.Helper()
	msg := err.Error()
	for _, want := range []string{
		"dict: zone size differs",
		path + " is " + strconv.FormatInt(size, 10) + " bytes",
		"Options.Size asks " + strconv.FormatInt(asked, 10),
		"shmctl dump " + path + " | shmctl restore " + path + ".new --size " + strconv.FormatInt(asked, 10) +
			" && mv " + path + ".new " + path,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open error = %q, want it to hold %q", msg, want)
		}
	}
}

// TestOpenSizeCommand checks the resize command in ErrSizeMismatch's
// message for paths that a shell or shmctl would read otherwise.
func TestOpenSizeCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	tests := []struct {
		path string // the path given to Open
		cmd  string // the command that ends the error's message
	}{
		{"z.zone", "shmctl dump ./z.zone | shmctl restore ./z.zone.new --size 2097152 && mv ./z.zone.new ./z.zone"},
		{"sub/z.zone", "shmctl dump sub/z.zone | shmctl restore sub/z.zone.new --size 2097152 && mv sub/z.zone.new sub/z.zone"},
		{"it's here.zone", `shmctl dump './it'\''s here.zone' | shmctl restore './it'\''s here.zone.new' --size 2097152 && mv './it'\''s here.zone.new' './it'\''s here.zone'`},
	}
	if err := os.Mkdir("sub", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		c, err := dict.Open(tt.path, dict.Options{Size: 1 << 20})
		if err != nil {
			t.Fatalf("Open(%q, Size 1 MiB) = %v", tt.path, err)
		}
		c.Close()
		d, err := dict.Open(tt.path, dict.Options{Size: 2 << 20})
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, dict.ErrSizeMismatch) || !strings.HasSuffix(err.Error(), tt.cmd) {
			t.Errorf("Open(%q, Size 2 MiB) = %v, want ErrSizeMismatch ending in %q", tt.path, err, tt.cmd)
		}
	}
}

// TestOpenCacheLineShards opens a zone made when shards were rounded to
// shm.ShardAlign, not to pages (testdata/cacheline-shards.zone: two shards
// of 65,600 bytes, and the key "made"). The Size it was made with still
// attaches, and the zone is sound. A Size that makes shards of whole
// pages is another size.
func TestOpenCacheLineShards(t *testing.T) {
	const made = 4096 + 2*(65536+64)
	src, err := os.ReadFile("testdata/cacheline-shards.zone")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.zone")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dict.Open(path, dict.Options{Size: 4096 + 2*65536}); !errors.Is(err, dict.ErrSizeMismatch) {
		t.Errorf("Open(Size of whole-page shards) = %v, want ErrSizeMismatch", err)
	}
	d, err := dict.Open(path, dict.Options{Size: made})
	if err != nil {
		t.Fatalf("Open(Size it was made with) = %v", err)
	}
	defer d.Close()
	if d.Size() != made || d.Header().ShardSize != 65536+64 {
		t.Errorf("Size() = %d, ShardSize %d; want %d, %d", d.Size(), d.Header().ShardSize, made, 65536+64)
	}
	if v, _, err := d.Get("made"); err != nil || string(v.Bytes()) != "with shards of cache lines" {
		t.Errorf("Get(made) = %v, %v", v, err)
	}
	if _, err := d.Set("new", dict.Int(1), 0, 0); err != nil {
		t.Errorf("Set on the old zone: %v", err)
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}
