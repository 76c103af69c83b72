package dict_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// The liveness hammer: lock holders and waiters in different PID namespaces
// by the thousand, rather than one of each. Holders preempted inside their
// critical section are waited for past the dead-check delay all the time on
// a loaded host, and each such wait asks whether the holder is alive; a
// single wrong answer takes over a live holder and loses its increment.

// hammerOps is enough Incr calls that, with four processes on one shard's
// lock and fewer cores than processes, holders are preempted inside their
// critical section many times a run: on two cores, a liveness check that
// judged every owner dead once it had waited past the dead-check delay
// fails this test in every run, with lost increments and recoveries.
const (
	hammerOps   = 2_000_000 // Incr calls per helper
	hammerKeys  = 8         // helper's i-th Incr is on key i % hammerKeys
	hammerReady = "ready"
)

func hammerKey(k int) string { return fmt.Sprintf("hammer-%d", k) }

// helperNSHammer opens the zone at args[0] with default options, prints
// "ready pid=P slot=S", waits at the gate, then calls Incr args[1] times
// over hammerKeys keys. The sums it sees on a key must grow, since every
// process only adds; any error, ErrLockTimeout included, fails it.
func helperNSHammer(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("want path and count, got %q", args)
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	keys := make([]string, hammerKeys)
	for k := range keys {
		keys[k] = hammerKey(k)
	}
	_, slot := dict.OwnerWord(d)
	fmt.Printf("%s pid=%d slot=%d\n", hammerReady, os.Getpid(), slot)
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	return incrInTurn(d, keys, n)
}

// TestLivenessHammer runs four helpers that Incr the same hammerKeys keys,
// in a one-shard zone so that every Incr contends for one lock, hammerOps
// times each: two as pid 1 of new PID namespaces (one with a
// /proc of its own, one seeing the host's), two in the test's namespace.
// Every helper must finish without error, every key must hold exactly
// 4 × hammerOps / hammerKeys (a live holder taken over loses its
// increment), no shard may have been recovered, and Check must pass.
func TestLivenessHammer(t *testing.T) {
	testutil.NeedRoot(t, "PID namespaces")
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for k := 0; k < hammerKeys; k++ {
		tmSet(t, d, hammerKey(k), dict.Int(0))
	}

	helpers := []struct {
		name   string
		modify func(*exec.Cmd) // nil: in the test's namespace
	}{
		{"pid 1 with its own proc", inNamespace(true)},
		{"pid 1 without its own proc", inNamespace(false)},
		{"outside 1", nil},
		{"outside 2", nil},
	}
	g := testutil.NewGate(t)
	type ready struct {
		i         int
		pid, slot int
		line      string
	}
	readyc := make(chan ready, len(helpers))
	procs := make([]*testutil.Proc, len(helpers))
	for i, h := range helpers {
		cmd := testutil.Helper(t, "ns-hammer", path, strconv.Itoa(hammerOps))
		if h.modify != nil {
			h.modify(cmd)
		}
		g.Attach(cmd)
		procs[i] = testutil.Start(t, cmd, func(line string) {
			r := ready{i: i, line: line}
			if _, err := fmt.Sscanf(line, hammerReady+" pid=%d slot=%d", &r.pid, &r.slot); err != nil {
				r.pid = -1
			}
			readyc <- r
		})
	}
	died := make(chan int, len(helpers))
	for i, p := range procs {
		go func() { <-p.Done(); died <- i }()
	}
	slots := make(map[int]string)
	for range helpers {
		var r ready
		select {
		case r = <-readyc:
		case i := <-died: // a helper ends only after the gate opens, unless it failed
			t.Fatalf("helper %q ended before it was ready: %v", helpers[i].name, procs[i].Wait())
		case <-time.After(timeoutHang):
			t.Fatalf("hammer helpers not all ready after %v", timeoutHang)
		}
		h := helpers[r.i]
		switch {
		case r.pid < 0:
			t.Fatalf("helper %q printed %q, want %q", h.name, r.line, hammerReady+" pid=P slot=S")
		case h.modify != nil && r.pid != 1:
			t.Fatalf("helper %q in a new PID namespace has pid %d, want 1", h.name, r.pid)
		case slots[r.slot] != "":
			t.Fatalf("helpers %q and %q both hold owner slot %d", slots[r.slot], h.name, r.slot)
		}
		slots[r.slot] = h.name
	}
	start := time.Now()
	g.Open()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Errorf("helper %q: %v", helpers[i].name, err)
		}
	}
	elapsed := time.Since(start)

	var sum int64
	want := int64(len(helpers) * hammerOps / hammerKeys)
	for k := 0; k < hammerKeys; k++ {
		v, _, err := d.Get(hammerKey(k))
		if err != nil || v.Kind() != dict.KindInt {
			t.Errorf("Get(%q) = %v, %v, want Int %d", hammerKey(k), v, err, want)
			continue
		}
		if v.Int() != want {
			t.Errorf("Get(%q) = %d, want %d", hammerKey(k), v.Int(), want)
		}
		sum += v.Int()
	}
	if total := int64(len(helpers) * hammerOps); sum != total {
		t.Errorf("sum of the keys = %d, want %d: %d increments lost", sum, total, total-sum)
	}
	st := d.Stats()
	if st.Recoveries != 0 {
		t.Errorf("Stats().Recoveries = %d, want 0: a live holder was taken over", st.Recoveries)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d processes × %d Incr on %d keys in %v, %d lock waits", len(helpers), hammerOps, hammerKeys, elapsed, st.LockWaits)
}
