package shm

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Tests of whose files Open may create a zone in: the caller's own, and
// writable by no one else beyond the mode asked for.

// nobody is the user the root-only tests hand files to and run helpers as.
const nobody = 65534

// TestOpenOthersWritable runs as any user: an empty file of the caller's
// that group or others may write is refused unless Perm lets them.
func TestOpenOthersWritable(t *testing.T) {
	for _, tt := range []struct {
		mode, perm os.FileMode
		ok         bool
	}{
		{0o600, 0, true},
		{0o644, 0, true}, // readable by others, as Perm then makes it 0600
		{0o666, 0, false},
		{0o620, 0o600, false},
		{0o602, 0o644, false},
		{0o666, 0o666, true},
		{0o660, 0o660, true},
	} {
		t.Run(tt.mode.String()+"/perm="+tt.perm.String(), func(t *testing.T) {
			path := tempZone(t)
			if err := os.WriteFile(path, nil, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			z, err := Open(path, Options{Size: smallSize, Shards: 2, Perm: tt.perm})
			fi, serr := os.Stat(path)
			if serr != nil {
				t.Fatal(serr)
			}
			if !tt.ok {
				if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrNotOwner) {
					t.Fatalf("Open(mode %v, Perm %v) = %v, want ErrNotOwner naming the file", tt.mode, tt.perm, err)
				}
				if fi.Size() != 0 || fi.Mode() != tt.mode {
					t.Fatalf("refused file is now %d bytes, mode %v; want 0, %v", fi.Size(), fi.Mode(), tt.mode)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(mode %v, Perm %v) = %v, want nil", tt.mode, tt.perm, err)
			}
			defer z.Close()
			want := tt.perm
			if want == 0 {
				want = 0o600
			}
			if !z.Created() || fi.Mode() != want {
				t.Fatalf("Created %v, mode %v; want true, %v", z.Created(), fi.Mode(), want)
			}
		})
	}
}

// sharedDir returns a sticky directory that every user may write, as /tmp
// and /dev/shm are, and a copy of the test binary every user may run.
func sharedDir(t *testing.T) (dir, bin string) {
	t.Helper()
	top := t.TempDir()
	for p := top; p != filepath.Dir(os.TempDir()) && p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir = filepath.Join(top, "shm")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(top, "shm.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// tryOpenAs runs Open(path, Size: size) in a helper process as uid and
// returns what it printed: "ok created=…" or "err=Name message".
func tryOpenAs(t *testing.T, bin string, uid int, path string, size int64) string {
	t.Helper()
	cmd := helperCommand(t, "try-open", path, strconv.FormatInt(size, 10))
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper as uid %d: %v; said %q", uid, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

func TestOpenOtherUsersFile(t *testing.T) {
	testutil.NeedRoot(t, "files of another user, and helpers running as uid 65534")
	dir, bin := sharedDir(t)

	t.Run("root refuses nobody's empty file", func(t *testing.T) {
		path := filepath.Join(dir, "nobody.zone")
		if err := os.WriteFile(path, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		for _, perm := range []os.FileMode{0, 0o666} {
			_, err := Open(path, Options{Size: smallSize, Shards: 2, Perm: perm})
			if !errors.Is(err, ErrNotOwner) || !strings.Contains(err.Error(), "uid 65534") {
				t.Fatalf("root Open(nobody's empty file, Perm %v) = %v, want ErrNotOwner naming uid 65534", perm, err)
			}
		}
		checkUntouched(t, path, nobody, 0o666, 0)
	})

	t.Run("root refuses nobody's unfinished creation", func(t *testing.T) {
		path := filepath.Join(dir, "nobody-marker.zone")
		data := marker(hdrSize, 0)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, small); !errors.Is(err, ErrNotOwner) {
			t.Fatalf("root Open(nobody's marker) = %v, want ErrNotOwner", err)
		}
		checkUntouched(t, path, nobody, 0o600, int64(len(data)))
		if !bytes.Equal(readFile(t, path), data) {
			t.Fatalf("refused marker file changed")
		}
	})

	t.Run("nobody refuses root's empty file", func(t *testing.T) {
		path := filepath.Join(dir, "root.zone")
		if err := os.WriteFile(path, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		got := tryOpenAs(t, bin, nobody, path, smallSize)
		if !strings.HasPrefix(got, "err=ErrNotOwner") {
			t.Fatalf("nobody's Open(root's empty 0666 file) said %q, want err=ErrNotOwner", got)
		}
		checkUntouched(t, path, 0, 0o666, 0)
	})

	t.Run("nobody creates in a sticky directory and root attaches", func(t *testing.T) {
		path := filepath.Join(dir, "made-by-nobody.zone")
		if got := tryOpenAs(t, bin, nobody, path, smallSize); got != "ok created=true" {
			t.Fatalf("nobody's Open(absent) said %q, want ok created=true", got)
		}
		checkUntouched(t, path, nobody, 0o600, smallSize)
		z := mustOpen(t, path, small) // attaching another user's zone is not creating in it
		if z.Created() {
			t.Fatalf("root's Open(nobody's zone).Created() = true, want false")
		}
	})
}

// checkUntouched fails unless path has owner uid, mode and size.
func checkUntouched(t *testing.T, path string, uid int, mode os.FileMode, size int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || fi.Mode().Perm() != mode || fi.Size() != size {
		t.Fatalf("%s: uid %d, mode %v, %d bytes; want uid %d, mode %v, %d bytes", path, st.Uid, fi.Mode().Perm(), fi.Size(), uid, mode, size)
	}
}
