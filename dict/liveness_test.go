package dict_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/shm"
)

// Liveness tests: lock holders and waiters in different PID namespaces, as
// containers that share a zone file are. A live holder is never taken over,
// whatever namespace it or its waiter is in, and a dead one is always
// recovered, whatever pid it had and whoever has that pid now (shm/doc.go,
// Lock owners). Each test ends with Check.

const (
	judgedLiveLine = "judged-live"
	livenessProbe  = 50 * time.Millisecond // a waiter's bound that proves it judged the holder live
)

// helperWaitIncr is a waiter: it opens the zone at args[0] and calls
// Incr(args[1], 1) with LockTimeout livenessProbe, which must time out
// (the holder is live), prints "judged-live pid=P", then calls Incr again
// without bound and prints "incr N".
func helperWaitIncr(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("want path and key, got %q", args)
	}
	probe, err := dict.Open(args[0], dict.Options{LockTimeout: livenessProbe})
	if err != nil {
		return err
	}
	defer probe.Close()
	if n, err := probe.Incr(args[1], 1); !errors.Is(err, dict.ErrLockTimeout) {
		return fmt.Errorf("Incr(%q, 1) with the lock held = %d, %v, want ErrLockTimeout", args[1], n, err)
	}
	fmt.Printf("%s pid=%d\n", judgedLiveLine, os.Getpid())
	d, err := dict.Open(args[0], dict.Options{LockTimeout: -1})
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := d.Incr(args[1], 1)
	if err != nil {
		return err
	}
	fmt.Printf("incr %d\n", n)
	return nil
}

// helperOpenHold opens the zone at args[0] read-write, prints
// "opened pid=P slot=S" and waits for stdin to close.
func helperOpenHold(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want path, got %q", args)
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	_, slot := dict.OwnerWord(d)
	fmt.Printf("opened pid=%d slot=%d\n", os.Getpid(), slot)
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// inNamespace returns a command modifier that starts a helper as pid 1 of a
// new PID namespace, with or without a /proc of its own.
func inNamespace(ownProc bool) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) { testutil.InPIDNamespace(cmd, ownProc) }
}

// livenessZone creates a one-shard zone holding k = 0 for a liveness test.
func livenessZone(t *testing.T) (string, *dict.Dict) {
	t.Helper()
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tmSet(t, d, "k", dict.Int(0))
	return path, d
}

// TestLivenessNamespaces: a holder inside Update and a waiter on the same
// key, in every arrangement of PID namespaces. The waiter must judge the
// holder live (its bounded Incr times out rather than taking over), and once
// the holder lets go both increments land: the count is exact and no shard
// was recovered.
func TestLivenessNamespaces(t *testing.T) {
	testutil.NeedRoot(t, "PID namespaces")
	tests := []struct {
		name   string
		holder func(*exec.Cmd) // nil: an ordinary helper
		waiter func(*exec.Cmd) // nil: an ordinary helper
		inTest bool            // the waiter is the test process itself
	}{
		{"holder in a namespace, waiter outside", inNamespace(true), nil, true},
		{"holder in a namespace without its own proc, waiter outside", inNamespace(false), nil, true},
		{"holder outside, waiter in a namespace", nil, inNamespace(true), false},
		{"holder outside, waiter in a namespace without its own proc", nil, inNamespace(false), false},
		{"both pid 1 in two namespaces", inNamespace(true), inNamespace(true), false},
		{"both pid 1 in two namespaces without their own proc", inNamespace(false), inNamespace(false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, d := livenessZone(t)
			holder, pid, _ := startHolder(t, path, "k", tt.holder)
			if tt.holder != nil && pid != 1 {
				t.Fatalf("holder in a new PID namespace has pid %d, want 1", pid)
			}
			var got int64
			if tt.inTest {
				got = waitInTest(t, path, holder)
			} else {
				got = waitInHelper(t, path, holder, tt.waiter)
			}
			if got != 2 {
				t.Errorf("waiter's Incr = %d, want 2: after the holder's write", got)
			}
			tmGet(t, d, "k", dict.Int(2))
			if st := d.Stats(); st.Recoveries != 0 {
				t.Errorf("Stats().Recoveries = %d, want 0: a live holder was taken over", st.Recoveries)
			}
			if err := d.Check(); err != nil {
				t.Fatalf("Check() = %v", err)
			}
		})
	}
}

// waitInTest is the waiter in the test process: a bounded Incr that must
// time out, then an unbounded one while the holder is let go. It returns
// the second Incr's sum.
func waitInTest(t *testing.T, path string, holder *helperProc) int64 {
	t.Helper()
	probe, err := dict.Open(path, dict.Options{LockTimeout: livenessProbe})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	start := time.Now()
	if n, err := probe.Incr("k", 1); !errors.Is(err, dict.ErrLockTimeout) {
		t.Fatalf("Incr(k, 1) with the lock held by a live holder = %d, %v, want ErrLockTimeout", n, err)
	}
	if el := time.Since(start); el < livenessProbe {
		t.Fatalf("Incr(k, 1) gave up after %v, before its LockTimeout %v", el, livenessProbe)
	}
	d, err := dict.Open(path, dict.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n atomic.Int64
	done := make(chan error, 1)
	go func() {
		v, err := d.Incr("k", 1)
		n.Store(v)
		done <- err
	}()
	holder.release(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Incr(k, 1) = %v", err)
		}
	case <-time.After(timeoutHang):
		t.Fatalf("Incr(k, 1) still waiting %v after the holder let go", timeoutHang)
	}
	return n.Load()
}

// waitInHelper is the waiter in a helper process (helperWaitIncr), started
// with modify. It returns the helper's second Incr's sum.
func waitInHelper(t *testing.T, path string, holder *helperProc, modify func(*exec.Cmd)) int64 {
	t.Helper()
	cmd := testutil.Helper(t, "wait-incr", path, "k")
	if modify != nil {
		modify(cmd)
	}
	w := startHelper(t, cmd)
	line := w.next(t, judgedLiveLine)
	var pid int
	if _, err := fmt.Sscanf(line, judgedLiveLine+" pid=%d", &pid); err != nil {
		t.Fatalf("waiter printed %q: %v", line, err)
	}
	if modify != nil && pid != 1 {
		t.Fatalf("waiter in a new PID namespace has pid %d, want 1", pid)
	}
	holder.release(t)
	var n int64
	line = w.next(t, "incr ")
	if _, err := fmt.Sscanf(line, "incr %d", &n); err != nil {
		t.Fatalf("waiter printed %q: %v", line, err)
	}
	if err := w.p.Wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return n
}

// TestLivenessKilledHolderWithoutProc: a holder that is pid 1 of a PID
// namespace without its own /proc (where pid 1 is the host's init, alive for
// good) is SIGKILLed inside Update: its lock is recovered.
func TestLivenessKilledHolderWithoutProc(t *testing.T) {
	testutil.NeedRoot(t, "PID namespaces")
	path, d := livenessZone(t)
	holder, pid, _ := startHolder(t, path, "k", inNamespace(false))
	if pid != 1 {
		t.Fatalf("holder in a new PID namespace has pid %d, want 1", pid)
	}
	if st := dict.LockState(d, 0); st != shm.LockLive {
		t.Fatalf("lock state with the holder alive = %d, want LockLive", st)
	}
	if err := holder.p.Kill(); err != nil {
		t.Fatal(err)
	}
	wantRecovered(t, d)
}

// TestLivenessPidReused: a holder, pid 1 of its namespace, is SIGKILLed
// inside Update; then another process, pid 1 of another namespace, opens the
// zone and holds the very owner slot the dead holder had. Neither the pid
// nor the held slot keeps the dead holder's lock alive: its generation is
// gone.
func TestLivenessPidReused(t *testing.T) {
	testutil.NeedRoot(t, "PID namespaces")
	path, d := livenessZone(t)
	holder, pid, slot := startHolder(t, path, "k", inNamespace(true))
	if err := holder.p.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd := testutil.Helper(t, "open-hold", path)
	testutil.InPIDNamespace(cmd, true)
	other := startHelper(t, cmd)
	line := other.next(t, "opened ")
	var pid2, slot2 int
	if _, err := fmt.Sscanf(line, "opened pid=%d slot=%d", &pid2, &slot2); err != nil {
		t.Fatalf("helper printed %q: %v", line, err)
	}
	if pid2 != pid || slot2 != slot {
		t.Fatalf("new process has pid %d and slot %d, want the dead holder's pid %d and slot %d", pid2, slot2, pid, slot)
	}
	wantRecovered(t, d)
	other.stdin.Close()
	if err := other.p.Wait(); err != nil {
		t.Fatalf("open-hold helper: %v", err)
	}
}

// TestLivenessHostileWord: a lock word that no owner wrote (0x1: slot 1,
// generation 0) is reported by a read-only Check and recovered by the next
// writer rather than blocking it.
func TestLivenessHostileWord(t *testing.T) {
	path, d := livenessZone(t)
	atomic.StoreUint64(dict.ShardLock(d, 0), 0x1)
	ro, err := dict.Open(path, dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Check(); !errors.Is(err, dict.ErrCorrupt) || !strings.Contains(err.Error(), "owner that is gone") {
		t.Errorf("read-only Check() with lock word 0x1 = %v, want ErrCorrupt naming the gone owner", err)
	}
	wantRecovered(t, d)
	if err := ro.Check(); err != nil {
		t.Errorf("read-only Check() after recovery = %v", err)
	}
}

// wantRecovered checks that shard 0's lock, held by an owner that is gone,
// is judged dead and taken over by the next Incr, which finds k as it was
// (the dead holder's write never happened) and leaves the zone sound.
func wantRecovered(t *testing.T, d *dict.Dict) {
	t.Helper()
	if st := dict.LockState(d, 0); st != shm.LockDead {
		t.Fatalf("lock state with its owner gone = %d, want LockDead", st)
	}
	done := make(chan error, 1)
	var n atomic.Int64
	go func() {
		v, err := d.Incr("k", 1)
		n.Store(v)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || n.Load() != 1 {
			t.Fatalf("Incr(k, 1) on a lock whose owner is gone = %d, %v, want 1, nil", n.Load(), err)
		}
	case <-time.After(timeoutHang):
		t.Fatalf("Incr(k, 1) on a lock whose owner is gone still waiting after %v", timeoutHang)
	}
	if st := d.Stats(); st.Recoveries != 1 {
		t.Errorf("Stats().Recoveries = %d, want 1", st.Recoveries)
	}
	if o := atomic.LoadUint64(dict.ShardLock(d, 0)); o != 0 {
		t.Errorf("lock word after recovery = %#x, want 0", o)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}
