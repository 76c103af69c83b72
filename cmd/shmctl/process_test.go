package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Tests that run shmctl as its own process: this test binary, which
// TestMain turns into shmctl when SHMCTL_AS_MAIN is set.

// shmctl returns a command that runs shmctl with args on zones in dir.
func shmctl(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "SHMCTL_AS_MAIN=1", "SHMZONE_DIR="+dir)
	return cmd
}

// exitOf runs cmd and returns its exit code and stderr.
func exitOf(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", cmd, err)
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

// TestProcessDumpRestore runs "shmctl dump app | shmctl restore big --size
// 2M --shards 4" as two processes joined by a pipe, on the system clock,
// and compares both zones key by key: kinds, values, flags exactly, TTLs
// within the time the processes and the scans took.
func TestProcessDumpRestore(t *testing.T) {
	dir := t.TempDir()
	src, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 512 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)

	dump := shmctl(t, dir, "dump", "app")
	restore := shmctl(t, dir, "restore", "big", "--size", "2M", "--shards", "4")
	pipe, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	restore.Stdin = pipe
	var dumpErr, restoreOut, restoreErr bytes.Buffer
	dump.Stderr, restore.Stdout, restore.Stderr = &dumpErr, &restoreOut, &restoreErr
	started := time.Now()
	if err := dump.Start(); err != nil {
		t.Fatal(err)
	}
	if err := restore.Start(); err != nil {
		t.Fatal(err)
	}
	derr, rerr := dump.Wait(), restore.Wait()
	// restore sets each TTL from its own clock, later than dump read it:
	// a restored key expires up to this much later than its original.
	shift := time.Since(started) + time.Millisecond
	if derr != nil || rerr != nil {
		t.Fatalf("dump: %v %s; restore: %v %s", derr, dumpErr.String(), rerr, restoreErr.String())
	}
	if !strings.HasPrefix(restoreOut.String(), "restored 312 keys") {
		t.Errorf("restore said %q", restoreOut.String())
	}

	dst, err := dict.Open(filepath.Join(dir, "big.zone"), dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if st := dst.Stats(); st.Shards != 4 || st.Capacity <= src.Size() {
		t.Errorf("restored zone: %d shards, %d bytes; want 4, more than %d", st.Shards, st.Capacity, src.Size())
	}
	scanned := time.Now()
	want := scanZone(t, src)
	got := scanZone(t, dst)
	// src is read first: its TTLs may run for this much longer. Each of the
	// four zones reads its own coarse clock, which lags the wall clock by
	// up to a tick, and by longer on a busy machine, where a tick can come
	// late. slack allows for that: the keys' TTLs are a second apart, so a
	// key that took another's TTL still fails.
	slack := time.Since(scanned) + shift + 500*time.Millisecond
	if len(got) != len(want) {
		t.Errorf("restored %d keys, want %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("key %q was not restored", k)
			continue
		}
		if g.kind() != w.kind() || g.flags != w.flags || !sameValue(g.value, w.value) || len(g.list) != len(w.list) {
			t.Errorf("key %q: %s flags %d, want %s flags %d", k, g.human(), g.flags, w.human(), w.flags)
		}
		for i := range w.list {
			if !sameValue(g.list[i], w.list[i]) {
				t.Errorf("key %q element %d: %v, want %v", k, i, g.list[i], w.list[i])
			}
		}
		if d := g.ttl - w.ttl; d < -slack || d > shift+slack || (w.ttl == 0) != (g.ttl == 0) {
			t.Errorf("key %q: TTL %v, want %v, later by at most %v (the dump and restore) and earlier by at most %v", k, g.ttl, w.ttl, shift+slack, slack)
		}
	}
}

// scanZone returns a zone's items by key, with their own copies of bytes.
func scanZone(t *testing.T, d *dict.Dict) map[string]item {
	t.Helper()
	m := map[string]item{}
	err := d.Scan(func(di dict.Item) bool {
		it := itemOf(di)
		if it.value.Kind() == dict.KindBytes {
			it.value = dict.Bytes(bytes.Clone(it.value.Bytes()))
		}
		it.list = nil
		for _, v := range di.List {
			if v.Kind() == dict.KindBytes {
				v = dict.Bytes(bytes.Clone(v.Bytes()))
			}
			it.list = append(it.list, v)
		}
		m[it.key] = it
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProcessExitCodes checks the documented exit codes of a real process,
// with its message on stderr.
func TestProcessExitCodes(t *testing.T) {
	dir := t.TempDir()
	if code, errs := exitOf(t, shmctl(t, dir, "create", "app", "--size", "256K")); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errs)
	}
	os.WriteFile(filepath.Join(dir, "junk.zone"), []byte("junk"), 0o600)
	writeOtherLayout(t, filepath.Join(dir, "other.zone"))
	exitOf(t, shmctl(t, dir, "create", "bad", "--size", "256K"))
	corruptHeader(t, filepath.Join(dir, "bad.zone"))
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"get", "app", "nothing"}, exitNo, "no such key nothing"},
		{[]string{"get", "app"}, exitUsage, "Usage: shmctl get"},
		{[]string{"get", "absent", "k"}, exitNoZone, "no such zone"},
		{[]string{"get", "junk", "k"}, exitNotZone, "not a zone file"},
		{[]string{"get", "other", "k"}, exitVersion, "incompatible zone version"},
		{[]string{"get", "bad", "k"}, exitCorrupt, "corrupt zone"},
	}
	for _, tt := range tests {
		code, errs := exitOf(t, shmctl(t, dir, tt.args...))
		if code != tt.code || !strings.Contains(errs, tt.msg) {
			t.Errorf("shmctl %q: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
}

// TestProcessPermission opens a zone its process may not read: as root the
// process runs as nobody, otherwise the zone's mode forbids it.
func TestProcessPermission(t *testing.T) {
	dir := t.TempDir()
	if code, errs := exitOf(t, shmctl(t, dir, "create", "app", "--size", "256K")); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errs)
	}
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		// nobody must be able to run the binary: copy it where it can
		// (t.TempDir's parent is 0700).
		binDir, err := os.MkdirTemp("", "shmctl-bin")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(binDir) })
		os.Chmod(binDir, 0o755)
		bin := filepath.Join(binDir, "shmctl")
		exe, _ := os.Executable()
		copyFile(t, exe, bin)
		cmd = exec.Command(bin, "info", "app")
		cmd.Env = append(os.Environ(), "SHMCTL_AS_MAIN=1", "SHMZONE_DIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else {
		os.Chmod(filepath.Join(dir, "app.zone"), 0)
		cmd = shmctl(t, dir, "info", "app")
	}
	code, errs := exitOf(t, cmd)
	if code != exitPerm || !strings.Contains(errs, "permission denied") {
		t.Errorf("info on a zone it may not read: exit %d, stderr %q; want %d and permission denied", code, errs, exitPerm)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
