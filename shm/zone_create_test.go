package shm

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// Tests of what Open may write: only an empty file or the marker of a
// creation this package began. Files of any other content, zeros included,
// are refused and left byte for byte as they were.

var createModes = []struct {
	name string
	o    Options
}{
	{"attach", Options{}},
	{"create", small},
	{"create larger", Options{Size: 4 * smallSize}},
	{"readonly", Options{ReadOnly: true, Size: smallSize}},
}

// marker returns the bytes of an unfinished creation of a small zone: the
// marker, then fill up to size bytes.
func marker(size int, fill byte) []byte {
	h, err := Geometry(smallSize, 2, 0)
	if err != nil {
		panic(err)
	}
	b := bytes.Repeat([]byte{fill}, max(size, hdrSize))
	encodeMarker(b, h)
	return b
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	disk := make([]byte, 1<<20) // a disk image: zeros, then data at 4096
	copy(disk[4096:], "\xebX\x90mkfs.fat\x00\x02")
	for i := 8192; i < len(disk); i += 512 {
		disk[i] = byte(i >> 9)
	}
	zone := func(t *testing.T) []byte { return makeZone(t, tempZone(t)) }
	tests := []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{"disk image with data at 4096", func(*testing.T) []byte { return disk }},
		{"109 bytes of user data", func(*testing.T) []byte { return []byte(strings.Repeat("user data ", 10) + "123456789") }},
		{"109 zero bytes", func(*testing.T) []byte { return make([]byte, 109) }},
		{"exactly a header of zeros", func(*testing.T) []byte { return make([]byte, hdrSize) }},
		{"a zone's size of zeros", func(*testing.T) []byte { return make([]byte, smallSize) }},
		{"zone with zeroed header", func(t *testing.T) []byte { b := zone(t); clear(b[:hdrSize]); return b }},
		{"zone with zeroed header page", func(t *testing.T) []byte { b := zone(t); clear(b[:HeaderSize]); return b }},
		{"marker larger than it says", func(*testing.T) []byte { return marker(smallSize+PageSize, 0) }},
		{"marker with bad checksum", func(*testing.T) []byte { b := marker(hdrSize, 0); b[30] ^= 1; return b }},
		{"marker of another byte order", func(*testing.T) []byte {
			b := marker(hdrSize, 0)
			nativeOrder.PutUint32(b[12:], 0x04030201)
			resum(b)
			return b
		}},
		{"marker cut short", func(*testing.T) []byte { return marker(hdrSize, 0)[:hdrSize-1] }},
	}
	for _, tt := range tests {
		for _, m := range createModes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				path := tempZone(t)
				data := tt.data(t)
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				_, err := Open(path, m.o)
				if !errors.Is(err, ErrNotZone) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open(%s, %+v) = %v, want ErrNotZone", tt.name, m.o, err)
				}
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name %s", err, path)
				}
				if got := readFile(t, path); !bytes.Equal(got, data) {
					t.Fatalf("Open(%s, %+v) changed the file", tt.name, m.o)
				}
			})
		}
	}
}

func TestOpenFinishesUnfinished(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"marker alone", marker(hdrSize, 0)},
		{"marker and part of the blocks", marker(smallSize/2, 0)},
		{"marker and every block", marker(smallSize, 0)},
		{"marker and a formatter's garbage", marker(smallSize, 0xa5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempZone(t)
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, o := range []Options{{}, {ReadOnly: true, Size: smallSize}} {
				_, err := Open(path, o)
				if !errors.Is(err, ErrNotZone) || !strings.Contains(err.Error(), "did not finish") {
					t.Fatalf("Open(unfinished, %+v) = %v, want ErrNotZone saying the creation did not finish", o, err)
				}
				if !bytes.Equal(readFile(t, path), tt.data) {
					t.Fatalf("Open(unfinished, %+v) changed the file", o)
				}
			}
			o := Options{Size: HeaderSize + 4*MinShardSize, Shards: 2} // another size than the marker's
			z := mustOpen(t, path, o)
			if !z.Created() || z.Header().Size != o.Size {
				t.Fatalf("Open(unfinished, Size) = Created %v, Size %d; want true, %d", z.Created(), z.Header().Size, o.Size)
			}
			for i := HeaderSize; i < len(z.data); i++ {
				if z.data[i] != 0 {
					t.Fatalf("finished zone has byte %#x at %d, want a fresh zone of zeros", z.data[i], i)
				}
			}
			z2 := mustOpen(t, path, Options{})
			if z2.Created() || z2.Header() != z.Header() {
				t.Fatalf("reattach: Created %v, Header %+v; want false, %+v", z2.Created(), z2.Header(), z.Header())
			}
		})
	}
}

// A creator killed inside Format leaves its marker; the next Open with a
// size finishes the zone, and no Open attaches it before.
func TestOpenAfterCreatorDied(t *testing.T) {
	path := tempZone(t)
	cmd := helperCommand(t, "die-in-format", path)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	if err == nil || !strings.Contains(out.String(), "formatting") {
		t.Fatalf("helper: %v, said %q; want it killed while formatting", err, out.String())
	}
	data := readFile(t, path)
	if !isMarker(data, int64(len(data))) {
		t.Fatalf("a killed creator left %.8q, want its marker", data)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNotZone) {
		t.Fatalf("Open(killed creation) = %v, want ErrNotZone", err)
	}
	z := mustOpen(t, path, small)
	if !z.Created() {
		t.Fatalf("Open(killed creation, Size).Created() = false, want true")
	}
	if string(z.Shard(0)[:4]) == "half" {
		t.Fatalf("finished zone keeps the killed formatter's bytes")
	}
}

// An empty file the caller owns is adopted (formatting it destroys
// nothing); a creation that fails in it leaves it empty, with its mode.
func TestOpenEmptyFile(t *testing.T) {
	path := tempZone(t)
	if err := os.WriteFile(path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	errFormat := errors.New("format failed")
	o := small
	o.Format = func(*Zone) error { return errFormat }
	if _, err := Open(path, o); !errors.Is(err, errFormat) {
		t.Fatalf("Open(empty, failing Format) = %v, want %v", err, errFormat)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 0 || fi.Mode() != 0o640 {
		t.Fatalf("after a failed creation: %v, %v; want an empty file of mode 0640", fi, err)
	}
	z := mustOpen(t, path, Options{Size: smallSize, Shards: 2, Perm: 0o640})
	if !z.Created() {
		t.Fatalf("Open(empty, Size).Created() = false, want true")
	}
}
