package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
	"golang.org/x/sys/unix"
)

// Tests of zones whose mapping faults, run as shmctl processes: a fault
// must end the verb with an error, never kill it with SIGBUS.

func TestProcessSparseOnFullTmpfs(t *testing.T) {
	testutil.NeedRoot(t, "mounts a small tmpfs")
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1M"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", mnt, err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

	orig := filepath.Join(t.TempDir(), "app.zone")
	d, err := dict.Open(orig, dict.Options{Size: 256 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Set("k", dict.String("v"), 0, 0); err != nil {
		t.Fatal(err)
	}
	d.Close()
	copy := filepath.Join(mnt, "app.zone")
	if out, err := exec.Command("cp", "--sparse=always", orig, copy).CombinedOutput(); err != nil {
		t.Fatalf("cp --sparse=always: %v: %s", err, out)
	}
	want, err := os.ReadFile(copy)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
	}

	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"check", "app"}, "fault in zone mapping"},
		{[]string{"set", "app", "k2", "v"}, "cannot back"},
		{[]string{"incr", "app", "n", "1"}, "cannot back"},
	} {
		code, stderr := exitOf(t, shmctl(t, mnt, tt.args...))
		if code != exitFail || !strings.Contains(stderr, tt.says) {
			t.Errorf("shmctl %v on a sparse zone on a full tmpfs: exit %d, %q; want exit %d saying %q", tt.args, code, stderr, exitFail, tt.says)
		}
	}
	if got, err := os.ReadFile(copy); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the sparse zone changed (%v)", err)
	}
}

// TestProcessWatchTruncated truncates a zone under a running watch: its
// next sample faults, and watch exits with the error.
func TestProcessWatchTruncated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.zone")
	d, err := dict.Open(path, dict.Options{Size: 256 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	cmd := shmctl(t, dir, "watch", "app", "--interval", "1ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hang := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer hang.Stop()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("watch printed nothing: %v; stderr %q", cmd.Wait(), stderr.String())
	}
	if err := os.Truncate(path, shm.HeaderSize); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitFail || !strings.Contains(stderr.String(), "fault in zone mapping") {
		t.Fatalf("watch of a zone truncated under it: exit %d (%v), %q; want exit %d saying fault in zone mapping",
			code, cmd.ProcessState, stderr.String(), exitFail)
	}
}
