package dict_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Lock timeout tests: a helper process holds a shard's lock inside Update
// (UpdateLocked, which takes it whatever fn returns) and is stopped with
// SIGSTOP, a live holder that will not let go; every
// operation of another process on that shard must give up with
// ErrLockTimeout after LockTimeout, having changed nothing, and once the
// holder is continued its write must land.

const (
	holdingLine = "holding"
	heldLine    = "done"
	// timeoutHang bounds every wait of these tests: a hang guard, not a
	// measure of speed.
	timeoutHang = 30 * time.Second
)

// helperHoldEntry is helperHoldUpdate with Update itself, which on a live
// int holds only the entry's page lock while fn runs.
func helperHoldEntry(args []string) error { return holdUpdate(args, (*dict.Dict).Update) }

// helperHoldUpdate opens the zone at args[0] and calls Update on key args[1]
// under the shard's lock: its fn prints "holding pid=P slot=S" (its pid as
// it sees it, its owner slot), then waits for a line on stdin before it adds
// 1 to the int it found. It prints heldLine once Update returned.
func helperHoldUpdate(args []string) error { return holdUpdate(args, dict.UpdateLocked) }

// holdUpdate is the helpers' body, with update as the Update they call.
func holdUpdate(args []string, update func(*dict.Dict, string, func(dict.Value, bool) (dict.Value, time.Duration, bool)) error) error {
	if len(args) != 2 {
		return fmt.Errorf("want path and key, got %q", args)
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	_, slot := dict.OwnerWord(d)
	in := bufio.NewReader(os.Stdin)
	var readErr error
	err = update(d, args[1], func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
		fmt.Printf("%s pid=%d slot=%d\n", holdingLine, os.Getpid(), slot)
		if _, readErr = in.ReadString('\n'); readErr != nil {
			return dict.Value{}, 0, true // leave it as it is
		}
		return dict.Int(cur.Int() + 1), 0, true
	})
	if err = errors.Join(err, readErr); err != nil {
		return err
	}
	fmt.Println(heldLine)
	return nil
}

// helperProc is a helper process whose stdin the test writes and whose
// stdout lines it reads in order.
type helperProc struct {
	p     *testutil.Proc
	stdin *os.File
	lines chan string
}

// startHelper starts cmd with a stdin pipe and its lines on a channel.
func startHelper(t *testing.T, cmd *exec.Cmd) *helperProc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	cmd.Stdin = r
	h := &helperProc{stdin: w, lines: make(chan string, 16)}
	h.p = testutil.Start(t, cmd, func(line string) { h.lines <- line })
	r.Close()
	return h
}

// next waits for the helper's next line and fails unless it starts with
// prefix; it returns the line.
func (h *helperProc) next(t *testing.T, prefix string) string {
	t.Helper()
	var line string
	select {
	case line = <-h.lines:
	case <-h.p.Done():
		// Every line reached the channel before Done: take one left there.
		select {
		case line = <-h.lines:
		default:
			t.Fatalf("helper exited before printing %q: %v", prefix, h.p.Wait())
		}
	case <-time.After(timeoutHang):
		t.Fatalf("helper did not print %q in %v", prefix, timeoutHang)
	}
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("helper printed %q, want %q…", line, prefix)
	}
	return line
}

// startHolder starts helperHoldUpdate on key with cmd's namespace settings
// (modify, when not nil, changes the command first), waits until it holds
// the lock and returns it with the pid and slot it reported.
func startHolder(t *testing.T, path, key string, modify func(*exec.Cmd)) (h *helperProc, pid, slot int) {
	return startHolderOf(t, "hold-update", path, key, modify)
}

// startHolderOf is startHolder with the helper named.
func startHolderOf(t *testing.T, helper, path, key string, modify func(*exec.Cmd)) (h *helperProc, pid, slot int) {
	t.Helper()
	cmd := testutil.Helper(t, helper, path, key)
	if modify != nil {
		modify(cmd)
	}
	h = startHelper(t, cmd)
	line := h.next(t, holdingLine)
	if _, err := fmt.Sscanf(line, holdingLine+" pid=%d slot=%d", &pid, &slot); err != nil {
		t.Fatalf("holder printed %q: %v", line, err)
	}
	return h, pid, slot
}

// stopHolder starts helperHoldUpdate on key, waits until it holds the lock,
// then stops it with SIGSTOP and waits until the kernel reports it stopped.
func stopHolder(t *testing.T, path, key string) *helperProc {
	return stopHolderOf(t, "hold-update", path, key)
}

// stopHolderOf is stopHolder with the helper named.
func stopHolderOf(t *testing.T, helper, path, key string) *helperProc {
	t.Helper()
	h, _, _ := startHolderOf(t, helper, path, key, nil)
	if err := syscall.Kill(h.p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", h.p.Pid(), err)
	}
	waitState(t, h.p.Pid(), 'T')
	return h
}

// release continues the holder, lets its fn return and waits for it to exit.
func (h *helperProc) release(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(h.p.Pid(), syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %d: %v", h.p.Pid(), err)
	}
	if _, err := h.stdin.WriteString("go\n"); err != nil {
		t.Fatalf("write to holder: %v", err)
	}
	h.next(t, heldLine)
	if err := h.p.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
}

// waitState waits until /proc says process pid is in state (R, S, T, …).
func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	deadline := time.Now().Add(timeoutHang)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatalf("read state of %d: %v", pid, err)
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not in state %c after %v: %s", pid, state, timeoutHang, s)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLockTimeoutStoppedHolder: with the only shard's lock held by a stopped
// process, every operation returns ErrLockTimeout after LockTimeout and
// changes nothing; once the holder goes on, its write lands and Check passes.
func TestLockTimeoutStoppedHolder(t *testing.T) {
	const timeout = 50 * time.Millisecond
	path := testutil.TempZone(t)
	// One shard: every key contends with the held one.
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1, LockTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tmSet(t, d, "k", dict.Int(0))
	tmSet(t, d, "other", dict.String("before"))
	if _, err := d.RPush("list", dict.Int(1)); err != nil {
		t.Fatalf("RPush(list, 1) = %v", err)
	}
	h := stopHolder(t, path, "k")

	ops := []struct {
		name string
		op   func() error
	}{
		{"Get", func() error { _, _, err := d.Get("k"); return err }},
		{"TTL", func() error { _, err := d.TTL("k"); return err }},
		{"Set", func() error { _, err := d.Set("other", dict.String("after"), 0, 0); return err }},
		{"Add", func() error { _, err := d.Add("new", dict.Int(1), 0, 0); return err }},
		{"Replace", func() error { _, err := d.Replace("other", dict.String("after"), 0, 0); return err }},
		{"Delete", func() error { return d.Delete("other") }},
		{"Incr", func() error { _, err := d.Incr("k", 1); return err }},
		{"IncrFloat", func() error { _, err := d.IncrFloat("k", 1); return err }},
		{"IncrInit", func() error { _, _, err := d.IncrInit("k", 1, 0, 0); return err }},
		{"Expire", func() error { return d.Expire("k", time.Hour) }},
		{"CompareAndSwap", func() error { _, err := d.CompareAndSwap("k", dict.Int(0), dict.Int(9), 0); return err }},
		{"Update", func() error {
			return d.Update("k", func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
				return dict.Int(cur.Int() + 100), 0, true
			})
		}},
		{"Mutate", func() error {
			return d.Mutate("bytes", 8, 0, func(b []byte, found bool) bool { b[0] = 1; return true })
		}},
		{"LPush", func() error { _, err := d.LPush("list", dict.Int(2)); return err }},
		{"RPop", func() error { _, err := d.RPop("list"); return err }},
		{"LLen", func() error { _, err := d.LLen("list"); return err }},
		{"LRange", func() error { _, err := d.LRange("list"); return err }},
		{"Keys", func() error { _, err := d.Keys(0); return err }},
		{"Scan", func() error { return d.Scan(func(dict.Item) bool { return true }) }},
		{"FlushExpired", func() error { _, err := d.FlushExpired(0); return err }},
		{"FlushAll", d.FlushAll},
		{"Repair", func() error { _, err := d.Repair(); return err }},
		{"Check", d.Check},
	}
	for _, o := range ops {
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- o.op() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(timeoutHang):
			t.Fatalf("%s with the lock held by a stopped process still waiting after %v", o.name, timeoutHang)
		}
		elapsed := time.Since(start)
		if !errors.Is(err, dict.ErrLockTimeout) {
			t.Errorf("%s with the lock held by a stopped process = %v, want ErrLockTimeout", o.name, err)
		}
		if elapsed < timeout {
			t.Errorf("%s gave up after %v, before LockTimeout %v", o.name, elapsed, timeout)
		}
	}
	if st := d.Stats(); st.Busy != 1 || st.Entries != 0 {
		t.Errorf("Stats() busy %d entries %d with the shard held, want 1 and 0 (left out)", st.Busy, st.Entries)
	}
	if st := d.ShardStats(0); st.Busy != 1 {
		t.Errorf("ShardStats(0).Busy = %d with the shard held, want 1", st.Busy)
	}
	if n := d.FreeSpace(); n != 0 {
		t.Errorf("FreeSpace() = %d with the only shard held, want 0 (left out)", n)
	}

	h.release(t)

	// Only the holder's write landed: none of the timed-out operations did.
	tmGet(t, d, "k", dict.Int(1))
	tmGet(t, d, "other", dict.String("before"))
	if ttl, err := d.TTL("k"); err != nil || ttl != 0 {
		t.Errorf("TTL(k) = %v, %v, want 0 (no expiry), nil", ttl, err)
	}
	for _, k := range []string{"new", "bytes"} {
		if v, _, err := d.Get(k); !errors.Is(err, dict.ErrNotFound) {
			t.Errorf("Get(%q) = %v, %v, want ErrNotFound", k, v, err)
		}
	}
	if l, err := d.LRange("list"); err != nil || len(l) != 1 || l[0].Int() != 1 {
		t.Errorf("LRange(list) = %v, %v, want [1]", l, err)
	}
	if st := d.Stats(); st.Busy != 0 || st.Entries != 3 || st.Recoveries != 0 {
		t.Errorf("Stats() busy %d entries %d recoveries %d, want 0, 3 and 0", st.Busy, st.Entries, st.Recoveries)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// TestLockTimeoutOtherShard: a stopped holder of one shard delays no
// operation on another shard.
func TestLockTimeoutOtherShard(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 4 << 20, Shards: 4, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tmSet(t, d, "k", dict.Int(0))
	h := stopHolder(t, path, "k")
	// A key of another shard: a lock-free Set on it must succeed even
	// though this Dict never gives up waiting (LockTimeout -1).
	other := ""
	for i := 0; other == ""; i++ {
		k := "o" + strconv.Itoa(i)
		if dict.ShardOf(d, k) != dict.ShardOf(d, "k") {
			other = k
		}
	}
	done := make(chan error, 1)
	go func() { _, err := d.Set(other, dict.Int(7), 0, 0); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Set(%q) on another shard = %v", other, err)
		}
	case <-time.After(timeoutHang):
		t.Fatalf("Set(%q) on another shard still waiting after %v", other, timeoutHang)
	}
	h.release(t)
	tmGet(t, d, "k", dict.Int(1))
	tmGet(t, d, other, dict.Int(7))
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

func tmSet(t *testing.T, d *dict.Dict, key string, v dict.Value) {
	t.Helper()
	if _, err := d.Set(key, v, 0, 0); err != nil {
		t.Fatalf("Set(%q, %v) = %v", key, v, err)
	}
}

func tmGet(t *testing.T, d *dict.Dict, key string, want dict.Value) {
	t.Helper()
	v, _, err := d.Get(key)
	if err != nil || !v.Equal(want) {
		t.Errorf("Get(%q) = %v, %v, want %v", key, v, err, want)
	}
}
