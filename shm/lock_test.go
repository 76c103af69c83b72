package shm

import (
	"bufio"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// lockZone opens a small zone read-write for lock tests and returns it with
// a fresh lock word in its first shard.
func lockZone(t *testing.T) (*Zone, *uint64) {
	t.Helper()
	z := mustOpen(t, tempZone(t), small)
	return z, word64(z.Shard(0), 0)
}

// inLockSlow reports whether some goroutine is waiting in lockSlow.
func inLockSlow() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "shm.(*Zone).lockSlow")
}

// freeSlotWord returns a lock word naming slot i with its current
// generation, a slot nobody holds: the word of an owner that has gone.
func freeSlotWord(t *testing.T, z *Zone, i int) uint64 {
	t.Helper()
	if z.slotHeld(i) {
		t.Fatalf("slot %d is held", i)
	}
	atomic.AddUint32(slotGen(z.data, i), 1) // as a claim by the gone owner did
	return ownerWord(i, atomic.LoadUint32(slotGen(z.data, i)))
}

func TestLockUnlock(t *testing.T) {
	z, w := lockZone(t)
	self := z.own.word
	if r := z.Lock(w); r != 0 {
		t.Fatalf("Lock(free) = %d, want 0", r)
	}
	if got := atomic.LoadUint64(w); got != self {
		t.Fatalf("word after Lock = %#x, want %#x", got, self)
	}
	if z.TryLock(w) {
		t.Fatalf("TryLock(held) = true, want false")
	}
	if got := z.LockState(w); got != LockLive {
		t.Fatalf("LockState(held by this zone) = %d, want LockLive", got)
	}
	Unlock(w)
	if got := z.LockState(w); got != LockFree || *w != 0 {
		t.Fatalf("after Unlock: LockState %d, word %#x; want LockFree, 0", got, *w)
	}
	if !z.TryLock(w) {
		t.Fatalf("TryLock(free) = false, want true")
	}
	Unlock(w)
}

// A read-write zone holds a slot, whose generation is in its word; a
// read-only one holds none.
func TestZoneSlots(t *testing.T) {
	path := tempZone(t)
	a := mustOpen(t, path, small)
	b := mustOpen(t, path, Options{})
	ro := mustOpen(t, path, Options{ReadOnly: true})
	if a.own.slot != 0 || b.own.slot != 1 || ro.own.slot != -1 {
		t.Fatalf("slots %d, %d, read-only %d; want 0, 1, -1", a.own.slot, b.own.slot, ro.own.slot)
	}
	for _, z := range []*Zone{a, b} {
		gen := atomic.LoadUint32(slotGen(a.data, z.own.slot))
		if want := ownerWord(z.own.slot, gen); z.own.word != want || gen == 0 {
			t.Errorf("slot %d: owner word %#x, want %#x (generation %d)", z.own.slot, z.own.word, want, gen)
		}
		if !ro.slotHeld(z.own.slot) {
			t.Errorf("slot %d of an open zone is not held, asked from a read-only zone", z.own.slot)
		}
	}
	gen := atomic.LoadUint32(slotGen(a.data, 1))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if a.slotHeld(1) {
		t.Fatal("slot 1 still held after its zone closed")
	}
	c := mustOpen(t, path, Options{})
	if c.own.slot != 1 || c.own.word != ownerWord(1, gen+1) {
		t.Fatalf("reopened zone: slot %d word %#x, want slot 1 with generation %d", c.own.slot, c.own.word, gen+1)
	}
	// Tags: the slot below the generation, none for a read-only zone.
	for _, z := range []*Zone{a, c} {
		gen := atomic.LoadUint32(slotGen(a.data, z.own.slot))
		if want := gen<<slotBits | uint32(z.own.slot); z.OwnerTag() != want {
			t.Errorf("slot %d generation %d: tag %#x, want %#x", z.own.slot, gen, z.OwnerTag(), want)
		}
	}
	if a.OwnerTag() == c.OwnerTag() || ro.OwnerTag() != 0 {
		t.Errorf("tags %#x and %#x, read-only %#x; want two apart and 0", a.OwnerTag(), c.OwnerTag(), ro.OwnerTag())
	}
	// A generation that leaves no bit above slot 0's: still a tag, not 0.
	atomic.StoreUint32(slotGen(a.data, 0), 1<<(32-slotBits)-1)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, path, Options{})
	if d.own.slot != 0 || d.OwnerTag() != 1<<slotBits {
		t.Fatalf("slot %d at generation %d: tag %#x, want %#x", d.own.slot, atomic.LoadUint32(slotGen(d.data, 0)), d.OwnerTag(), 1<<slotBits)
	}
}

// A Lock that finds the word held by a live owner waits for it, and says so.
func TestLockWaits(t *testing.T) {
	z, w := lockZone(t)
	z.Lock(w)
	done := make(chan LockResult)
	go func() { done <- z.Lock(w) }()
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
	if got := *w; got != z.own.word {
		t.Fatalf("word = %#x, want %#x", got, z.own.word)
	}
}

func TestLockCounter(t *testing.T) {
	const goroutines, n = 4, 10000
	z, w := lockZone(t)
	b := z.Shard(0)
	var wg sync.WaitGroup
	var recovered atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if z.Lock(w)&LockRecovered != 0 {
					recovered.Add(1)
				}
				plainIncr(b[8:])
				Unlock(w)
			}
		}()
	}
	wg.Wait()
	if got := nativeOrder.Uint64(b[8:]); got != goroutines*n {
		t.Fatalf("counter = %d, want %d", got, goroutines*n)
	}
	if n := recovered.Load(); n != 0 {
		t.Fatalf("%d Locks reported LockRecovered with a live owner", n)
	}
	if got := *w; got != 0 {
		t.Fatalf("word after all Unlocks = %#x, want 0", got)
	}
}

// A word whose owner is gone, or that no owner wrote, is taken over.
func TestLockDeadOwner(t *testing.T) {
	z, w := lockZone(t)
	other := mustOpen(t, z.path, Options{}) // holds slot 1: live
	tests := []struct {
		name string
		word uint64
	}{
		{"free slot", freeSlotWord(t, z, 5)},
		{"slot claimed again since", ownerWord(other.own.slot, atomic.LoadUint32(slotGen(z.data, other.own.slot))-1)},
		{"hostile 0x1", 0x1},
		{"slot out of range", ownerWord(Slots, 1)},
		{"generation 0", ownerWord(other.own.slot, 0)},
		{"all ones", ^uint64(0) - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*w = tt.word
			if got := z.LockState(w); got != LockDead {
				t.Fatalf("LockState(%#x) = %d, want LockDead", tt.word, got)
			}
			if r := z.Lock(w); r != LockRecovered|LockWaited {
				t.Fatalf("Lock(%#x) = %d, want LockRecovered|LockWaited (%d)", tt.word, r, LockRecovered|LockWaited)
			}
			if *w != z.own.word {
				t.Fatalf("word after recovery = %#x, want %#x", *w, z.own.word)
			}
			Unlock(w)
		})
	}
}

// ownerDead tells live owners, this zone's goroutines and another zone of
// this process on the same file included, from gone ones.
func TestOwnerDead(t *testing.T) {
	z, _ := lockZone(t)
	other := mustOpen(t, z.path, Options{})
	ro := mustOpen(t, z.path, Options{ReadOnly: true})
	tests := []struct {
		name string
		z    *Zone
		word uint64
		want bool
	}{
		{"self", z, z.own.word, false},
		{"another zone of this process", z, other.own.word, false},
		{"asked read-only", ro, other.own.word, false},
		{"its own slot, earlier generation", z, ownerWord(z.own.slot, atomic.LoadUint32(slotGen(z.data, z.own.slot))-1), true},
		{"free slot", z, freeSlotWord(t, z, 9), true},
		{"free slot, asked read-only", ro, freeSlotWord(t, z, 10), true},
		{"read-only zone's word, asked by another", z, ro.own.word, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.z.ownerDead(tt.word); got != tt.want {
				t.Fatalf("ownerDead(%#x) = %v, want %v", tt.word, got, tt.want)
			}
		})
	}
}

// startLocker starts the "lock" helper on the zone at path and waits until
// it holds the first lock word of shard 0. It returns the running helper,
// which the test ends, and the word and LockResult the helper reported.
func startLocker(t *testing.T, path string) (cmd *exec.Cmd, word uint64, r LockResult) {
	t.Helper()
	cmd = helperCommand(t, "lock", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if _, err := fmt.Sscanf(line, "locked %d %d", &word, &r); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	return cmd, word, r
}

// A child process takes a lock word in a real zone and is killed while it
// holds it: the parent's Lock takes it over and says so.
func TestLockKilledOwner(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	w := word64(z.Shard(0), 0)

	cmd, word, r := startLocker(t, path)
	if word != ownerWord(1, 1) || r != 0 {
		t.Fatalf("child locked as %#x with %d, want slot 1 generation 1 with 0", word, r)
	}
	if got := atomic.LoadUint64(w); got != word {
		t.Fatalf("word in the parent's mapping = %#x, want the child's %#x", got, word)
	}
	if z.TryLock(w) {
		t.Fatalf("TryLock(held by live child) = true")
	}
	if got := z.LockState(w); got != LockLive {
		t.Fatalf("LockState(held by live child) = %d, want LockLive", got)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if got := z.Lock(w); got != LockRecovered|LockWaited {
		t.Fatalf("Lock(held by killed child) = %d, want LockRecovered|LockWaited (%d)", got, LockRecovered|LockWaited)
	}
	if got := *w; got != z.own.word {
		t.Fatalf("word after recovery = %#x, want %#x", got, z.own.word)
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
		if r := z.Lock(w); r&LockRecovered != 0 {
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
	if got := *w; got != 0 {
		t.Fatalf("word at the end = %#x, want 0", got)
	}
}

// Slots zones may be open read-write on one file; the next Open is refused
// with ErrNoSlot, read-only Opens still work, and a Close frees a slot.
func TestZoneSlotsExhausted(t *testing.T) {
	path := tempZone(t)
	zones := []*Zone{mustOpen(t, path, small)}
	for len(zones) < Slots {
		zones = append(zones, mustOpen(t, path, Options{}))
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("Open with all %d slots held = %v, want ErrNoSlot", Slots, err)
	}
	mustOpen(t, path, Options{ReadOnly: true})
	if err := zones[7].Close(); err != nil {
		t.Fatal(err)
	}
	if z := mustOpen(t, path, Options{}); z.own.slot != 7 {
		t.Fatalf("Open after slot 7's zone closed holds slot %d, want 7", z.own.slot)
	}
}
