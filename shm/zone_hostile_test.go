package shm

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Tests of Open on hostile or damaged files: foreign or corrupt headers,
// truncated or extended files, symlinks, directories, FIFOs, sockets and
// devices, and blank headers left by a creator that died.

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
		{name: "shard size not a multiple of ShardAlign", setup: func(t *testing.T, p string) {
			makeZone(t, p)
			rewriteHeader(t, p, true, func(b []byte) { nativeOrder.PutUint64(b[48:], MinShardSize+ShardAlign/2) })
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
				case <-time.After(time.Minute):
					t.Fatalf("Open(%s, %+v) still blocked after a minute", tt.name, o)
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
