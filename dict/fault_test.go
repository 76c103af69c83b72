package dict_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/shm"
)

// truncateZone cuts a zone file down to its header page from another
// process, as an operator's `truncate` or `>` would, while it is mapped.
func truncateZone(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("truncate", "-s", fmt.Sprint(shm.HeaderSize), path).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v: %s", err, out)
	}
}

// With GuardFaults, every operation on a zone truncated under the Dict
// returns an error wrapping shm.ErrFault, and keeps returning it, instead of
// killing the process; Close still works.
func TestGuardFaultsTruncated(t *testing.T) {
	ops := []struct {
		name string
		op   func(d *dict.Dict) error
	}{
		{"Get", func(d *dict.Dict) error { _, _, err := d.Get("k"); return err }},
		{"TTL", func(d *dict.Dict) error { _, err := d.TTL("k"); return err }},
		{"Set", func(d *dict.Dict) error { _, err := d.Set("k", dict.Int(2), 0, 0); return err }},
		{"Add", func(d *dict.Dict) error { _, err := d.Add("new", dict.Int(2), 0, 0); return err }},
		{"Delete", func(d *dict.Dict) error { return d.Delete("k") }},
		{"Incr", func(d *dict.Dict) error { _, err := d.Incr("k", 1); return err }},
		{"IncrFloat", func(d *dict.Dict) error { _, err := d.IncrFloat("k", 1); return err }},
		{"IncrInit", func(d *dict.Dict) error { _, _, err := d.IncrInit("k", 1, 0, 0); return err }},
		{"Expire", func(d *dict.Dict) error { return d.Expire("k", time.Minute) }},
		{"CompareAndSwap", func(d *dict.Dict) error {
			_, err := d.CompareAndSwap("k", dict.Int(1), dict.Int(2), 0)
			return err
		}},
		{"Update", func(d *dict.Dict) error {
			return d.Update("k", func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) { return dict.Int(3), 0, true })
		}},
		{"Mutate", func(d *dict.Dict) error {
			return d.Mutate("b", 8, 0, func(b []byte, _ bool) bool { b[0]++; return true })
		}},
		{"LPush", func(d *dict.Dict) error { _, err := d.LPush("l", dict.Int(1)); return err }},
		{"LPop", func(d *dict.Dict) error { _, err := d.LPop("l"); return err }},
		{"LLen", func(d *dict.Dict) error { _, err := d.LLen("l"); return err }},
		{"LRange", func(d *dict.Dict) error { _, err := d.LRange("l"); return err }},
		{"SetList", func(d *dict.Dict) error { return d.SetList("l", []dict.Value{dict.Int(1)}, 0) }},
		{"Keys", func(d *dict.Dict) error { _, err := d.Keys(0); return err }},
		{"Scan", func(d *dict.Dict) error { return d.Scan(func(dict.Item) bool { return true }) }},
		{"FlushExpired", func(d *dict.Dict) error { _, err := d.FlushExpired(0); return err }},
		{"FlushAll", func(d *dict.Dict) error { return d.FlushAll() }},
		{"Check", func(d *dict.Dict) error { return d.Check() }},
		{"Repair", func(d *dict.Dict) error { _, err := d.Repair(); return err }},
	}
	for _, tc := range ops {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := zonetest.OpenUnchecked(t, dict.Options{GuardFaults: true})
			path := d.Path()
			tmSet(t, d, "k", dict.Int(1))
			if _, err := d.LPush("l", dict.Int(1)); err != nil {
				t.Fatal(err)
			}
			truncateZone(t, path)
			err := tc.op(d)
			if !errors.Is(err, shm.ErrFault) {
				t.Fatalf("%s on a truncated zone: %v, want shm.ErrFault", tc.name, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error does not name the zone: %v", err)
			}
			// The Dict stays unusable, at no risk of a second fault.
			if _, _, err2 := d.Get("k"); !errors.Is(err2, shm.ErrFault) {
				t.Errorf("Get after the fault: %v, want shm.ErrFault", err2)
			}
			if st := d.Stats(); st.Entries != 0 {
				t.Errorf("Stats after the fault counted %d entries", st.Entries)
			}
			if err := d.Close(); err != nil {
				t.Errorf("Close after the fault: %v", err)
			}
		})
	}
}

// The statistics calls, which return no error, neither crash nor report
// figures from a truncated zone, and leave the Dict unusable.
func TestGuardFaultsStats(t *testing.T) {
	d, _ := zonetest.OpenUnchecked(t, dict.Options{GuardFaults: true})
	tmSet(t, d, "k", dict.Int(1))
	truncateZone(t, d.Path())
	_ = d.Stats()
	if _, _, err := d.Get("k"); !errors.Is(err, shm.ErrFault) {
		t.Fatalf("Get after Stats faulted: %v, want shm.ErrFault", err)
	}
	if err := d.Err(); !errors.Is(err, shm.ErrFault) {
		t.Errorf("Err after the fault: %v, want shm.ErrFault", err)
	}
	if n := d.FreeSpace(); n != 0 {
		t.Errorf("FreeSpace after the fault: %d", n)
	}
	if rows := d.SlabStats(); rows != nil {
		t.Errorf("SlabStats after the fault: %v", rows)
	}
	if st := d.ShardStats(0); st.Entries != 0 {
		t.Errorf("ShardStats after the fault: %+v", st)
	}
}

// The guard turns faults into errors and nothing else: a panic of the
// caller's function goes on unchanged, and the Dict stays usable.
func TestGuardFaultsOtherPanics(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{GuardFaults: true})
	tmSet(t, d, "k", dict.Int(1))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the function's own panic", r)
			}
		}()
		d.Update("k", func(dict.Value, bool) (dict.Value, time.Duration, bool) { panic("boom") })
	}()
	if n, err := d.Incr("k", 1); err != nil || n != 2 {
		t.Fatalf("Incr after the panic: %d, %v", n, err)
	}
}

// helperFaultIncr opens a zone without the guard, increments k, says
// "ready", waits for stdin to close and increments k again.
func helperFaultIncr(args []string) error {
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Incr("k", 1); err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	_, err = d.Incr("k", 1)
	return err
}

// Without the guard, an operation on a zone truncated under it stops the
// process with the runtime's report of the SIGBUS: a crash that says what
// happened, never a write that lands somewhere it should not.
func TestUnguardedTruncationCrashes(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	tmSet(t, d, "k", dict.Int(0))
	d.Close()
	ready := make(chan struct{})
	gate := testutil.NewGate(t)
	cmd := testutil.Helper(t, "fault-incr", path)
	gate.Attach(cmd)
	p := testutil.Start(t, cmd, func(line string) {
		if line == "ready" {
			close(ready)
		}
	})
	select {
	case <-ready:
	case <-p.Done():
		t.Fatalf("helper ended before it was ready: %v", p.Wait())
	}
	truncateZone(t, path)
	gate.Open()
	err = p.Wait()
	if err == nil {
		t.Fatal("the helper's Incr on a truncated zone succeeded")
	}
	if !strings.Contains(err.Error(), "SIGBUS") {
		t.Fatalf("the helper did not die of the SIGBUS: %v", err)
	}
	if _, err := dict.Open(path, dict.Options{}); err == nil {
		t.Fatal("Open of the truncated zone succeeded")
	}
}
