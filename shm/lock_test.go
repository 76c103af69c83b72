package shm

import (
	"bufio"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// lockWord returns a fresh lock word in a byte slice, as it would be in a
// zone, and the slice.
func lockWord(t *testing.T) (*uint64, []byte) {
	t.Helper()
	mem := make([]uint64, 8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), 64)
	return word64(b, 0), b
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) uint32 {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return uint32(cmd.Process.Pid)
}

// inLockSlow reports whether some goroutine is waiting in lockSlow.
func inLockSlow() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "shm.lockSlow")
}

func TestLockUnlock(t *testing.T) {
	w, _ := lockWord(t)
	if r := Lock(w); r != 0 {
		t.Fatalf("Lock(free) = %d, want 0", r)
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner after Lock = %d, want %d", got, Self)
	}
	if TryLock(w) {
		t.Fatalf("TryLock(held) = true, want false")
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner after failed TryLock = %d, want %d", got, Self)
	}
	Unlock(w)
	if got := Owner(w); got != 0 {
		t.Fatalf("Owner after Unlock = %d, want 0", got)
	}
	if !TryLock(w) {
		t.Fatalf("TryLock(free) = false, want true")
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner after TryLock = %d, want %d", got, Self)
	}
	Unlock(w)
	if got := Owner(w); got != 0 {
		t.Fatalf("Owner after Unlock = %d, want 0", got)
	}
}

// A Lock that finds the word held by a live owner waits for it, and says so.
func TestLockWaits(t *testing.T) {
	w, _ := lockWord(t)
	Lock(w)
	done := make(chan LockResult)
	go func() { done <- Lock(w) }()
	for !inLockSlow() {
		runtime.Gosched()
	}
	select {
	case r := <-done:
		t.Fatalf("Lock(held) returned %d while the lock was held", r)
	default:
	}
	Unlock(w)
	if r := <-done; r != LockWaited {
		t.Fatalf("Lock(held by a live owner) = %d, want LockWaited (%d)", r, LockWaited)
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner = %d, want %d", got, Self)
	}
}

func TestLockCounter(t *testing.T) {
	const goroutines, n = 4, 10000
	w, b := lockWord(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var recovered int
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bad := 0
			for i := 0; i < n; i++ {
				if Lock(w)&LockRecovered != 0 {
					bad++
				}
				plainIncr(b[8:])
				Unlock(w)
			}
			mu.Lock()
			recovered += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	if got := nativeOrder.Uint64(b[8:]); got != goroutines*n {
		t.Fatalf("counter = %d, want %d", got, goroutines*n)
	}
	if recovered != 0 {
		t.Fatalf("%d Locks reported LockRecovered with a live owner", recovered)
	}
	if got := Owner(w); got != 0 {
		t.Fatalf("Owner after all Unlocks = %d, want 0", got)
	}
}

func TestLockDeadOwner(t *testing.T) {
	w, _ := lockWord(t)
	dead := deadPid(t)
	*w = uint64(dead)
	if r := Lock(w); r != LockRecovered|LockWaited {
		t.Fatalf("Lock(owned by dead pid %d) = %d, want LockRecovered|LockWaited (%d)", dead, r, LockRecovered|LockWaited)
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner after recovery = %d, want %d", got, Self)
	}
	Unlock(w)
}

func TestAlive(t *testing.T) {
	dead := deadPid(t)
	tests := []struct {
		name string
		pid  uint32
		want bool
	}{
		{"self", Self, true},
		{"init", 1, true},
		{"zero", 0, false},
		{"dead", dead, false},
		{"beyond pid_max", 1<<22 + 1, false},
		{"max uint32", math.MaxUint32, false},
		{"negative as int32", 1 << 31, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Alive(tt.pid); got != tt.want {
				t.Fatalf("Alive(%d) = %v, want %v", tt.pid, got, tt.want)
			}
		})
	}
}

// ownerDead tells a live owner from a dead one, including a pid handed out
// again to another process or to this one.
func TestOwnerDead(t *testing.T) {
	dead := deadPid(t)
	tests := []struct {
		name  string
		owner uint64
		want  bool
	}{
		{"self", selfWord, false},
		{"self, earlier incarnation", ownerWord(Self, startToken(Self)+1), true},
		{"live", 1, false},
		{"live pid, other start time", ownerWord(1, startToken(1)+1), true},
		{"dead", uint64(dead), true},
		{"impossible pid", math.MaxUint32, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownerDead(tt.owner); got != tt.want {
				t.Fatalf("ownerDead(%#x) = %v, want %v", tt.owner, got, tt.want)
			}
		})
	}
}

// The start-time token is readable here, so that a reused pid is told apart.
func TestStartToken(t *testing.T) {
	if tok := startToken(Self); tok == 0 {
		t.Fatalf("startToken(self) = 0: /proc/self/stat not parsed")
	}
	if tok := startToken(deadPid(t)); tok != 0 {
		t.Fatalf("startToken(dead pid) = %d, want 0", tok)
	}
	if got := uint32(selfWord); got != Self {
		t.Fatalf("selfWord pid = %d, want %d", got, Self)
	}
}

// A child process takes a lock word in a real zone and is killed while it
// holds it: the parent's Lock takes it over and says so.
func TestLockKilledOwner(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	w := word64(z.Shard(0), 0)

	cmd := helperCommand(t, "lock", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	var pid uint32
	var r LockResult
	if _, err := fmt.Sscanf(line, "locked %d %d", &pid, &r); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	if pid != uint32(cmd.Process.Pid) || r != 0 {
		t.Fatalf("child locked as pid %d with %d, want pid %d with 0", pid, r, cmd.Process.Pid)
	}
	if got := Owner(w); got != pid {
		t.Fatalf("Owner in the parent's mapping = %d, want child %d", got, pid)
	}
	if TryLock(w) {
		t.Fatalf("TryLock(held by live child) = true")
	}
	if ownerDead(atomic.LoadUint64(w)) {
		t.Fatalf("ownerDead(held by live child) = true")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // reap it: a zombie still answers kill(pid, 0)
	if got := Lock(w); got != LockRecovered|LockWaited {
		t.Fatalf("Lock(held by killed child) = %d, want LockRecovered|LockWaited (%d)", got, LockRecovered|LockWaited)
	}
	if got := Owner(w); got != Self {
		t.Fatalf("Owner after recovery = %d, want %d", got, Self)
	}
	Unlock(w)
}

// Processes add to a counter in a zone under its lock word: the sum is exact.
func TestLockProcesses(t *testing.T) {
	const procs, n = 3, 3000
	path := tempZone(t)
	z := mustOpen(t, path, small)
	var cmds []*exec.Cmd
	var starts []func()
	for i := 0; i < procs; i++ {
		cmd := helperCommand(t, "incr", path, fmt.Sprint(n))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		starts = append(starts, func() { fmt.Fprintln(stdin, "go"); stdin.Close() })
	}
	for _, start := range starts {
		start()
	}
	w, b := word64(z.Shard(0), 0), z.Shard(0)
	for i := 0; i < n; i++ {
		if r := Lock(w); r&LockRecovered != 0 {
			t.Errorf("Lock = %d with live owners", r)
		}
		plainIncr(b[64:])
		Unlock(w)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	if got := nativeOrder.Uint64(b[64:]); got != (procs+1)*n {
		t.Fatalf("counter = %d, want %d", got, (procs+1)*n)
	}
	if got := Owner(w); got != 0 {
		t.Fatalf("Owner at the end = %d, want 0", got)
	}
}
