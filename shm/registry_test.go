package shm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
)

func words(v uint64) [RecordWords]uint64 {
	var d [RecordWords]uint64
	for i := range d {
		d[i] = v
	}
	return d
}

func TestRegistryStoreLoadDelete(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	if got := z.Records(); len(got) != 0 {
		t.Fatalf("Records() of a new zone = %v, want none", got)
	}
	g0 := z.Generation()
	if err := z.StoreRecord(1, words(10)); err != nil {
		t.Fatalf("StoreRecord(1) = %v", err)
	}
	if err := z.StoreRecord(2, words(20)); err != nil {
		t.Fatalf("StoreRecord(2) = %v", err)
	}
	if err := z.StoreRecord(1, words(11)); err != nil {
		t.Fatalf("StoreRecord(1) again = %v", err)
	}
	if g := z.Generation(); g != g0+3 {
		t.Errorf("Generation() after 3 stores = %d, want %d", g, g0+3)
	}
	tests := []struct {
		key  uint64
		want uint64
		ok   bool
	}{{1, 11, true}, {2, 20, true}, {3, 0, false}}
	for _, tt := range tests {
		r, ok := z.LoadRecord(tt.key)
		if ok != tt.ok || r.Data != words(tt.want) {
			t.Errorf("LoadRecord(%d) = %v, %v, want data %d, %v", tt.key, r.Data, ok, tt.want, tt.ok)
		}
	}
	if n := len(z.Records()); n != 2 {
		t.Errorf("len(Records()) = %d, want 2", n)
	}
	if ok, err := z.DeleteRecord(1); !ok || err != nil {
		t.Errorf("DeleteRecord(1) = %v, %v, want true, nil", ok, err)
	}
	if ok, err := z.DeleteRecord(1); ok || err != nil {
		t.Errorf("DeleteRecord(1) again = %v, %v, want false, nil", ok, err)
	}
	if _, ok := z.LoadRecord(1); ok {
		t.Errorf("LoadRecord(1) after DeleteRecord found it")
	}
	if g := z.Generation(); g != g0+4 {
		t.Errorf("Generation() after a delete = %d, want %d", g, g0+4)
	}
	if err := z.BumpGeneration(); err != nil || z.Generation() != g0+5 {
		t.Errorf("BumpGeneration() = %v, generation %d, want nil, %d", err, z.Generation(), g0+5)
	}
	z.Close()
	if g := z.Generation(); g != 0 {
		t.Errorf("Generation() after Close = %d, want 0", g)
	}
}

func TestRegistryRefuses(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	if err := z.StoreRecord(0, words(1)); !errors.Is(err, ErrBadOptions) {
		t.Errorf("StoreRecord(0) = %v, want ErrBadOptions", err)
	}
	for k := range uint64(RegSlots) {
		if err := z.StoreRecord(k+1, words(k)); err != nil {
			t.Fatalf("StoreRecord(%d) = %v", k+1, err)
		}
	}
	if err := z.StoreRecord(RegSlots+1, words(1)); !errors.Is(err, ErrRegistryFull) {
		t.Errorf("StoreRecord into a full registry = %v, want ErrRegistryFull", err)
	}
	if err := z.StoreRecord(3, words(33)); err != nil {
		t.Errorf("StoreRecord(3) over its own record in a full registry = %v, want nil", err)
	}
	ro := mustOpen(t, path, Options{ReadOnly: true})
	if err := ro.StoreRecord(1, words(1)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only StoreRecord = %v, want ErrReadOnly", err)
	}
	if _, err := ro.DeleteRecord(1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only DeleteRecord = %v, want ErrReadOnly", err)
	}
	if err := ro.BumpGeneration(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only BumpGeneration = %v, want ErrReadOnly", err)
	}
	if r, ok := ro.LoadRecord(3); !ok || r.Data != words(33) {
		t.Errorf("read-only LoadRecord(3) = %v, %v, want data 33", r.Data, ok)
	}
}

// TestRegistrySurvivesReopen: records stay in the file when every process
// has closed it.
func TestRegistrySurvivesReopen(t *testing.T) {
	path := tempZone(t)
	z, err := Open(path, small)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.StoreRecord(9, words(99)); err != nil {
		t.Fatal(err)
	}
	z.Close()
	z2 := mustOpen(t, path, Options{})
	if r, ok := z2.LoadRecord(9); !ok || r.Data != words(99) {
		t.Errorf("LoadRecord(9) after reopen = %v, %v, want data 99", r.Data, ok)
	}
}

// TestRegistryDeadWriter: a writer that died inside a record left its
// sequence odd and the lock held. The next writer takes the lock over and
// frees the half-written record; readers then see it gone.
func TestRegistryDeadWriter(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	if err := z.StoreRecord(5, words(5)); err != nil {
		t.Fatal(err)
	}
	s := regSlotAt(z.data, 0)
	lock, _ := z.regWords()
	atomic.AddUint32(&s.Seq, 1)       // a write begun
	atomic.StoreUint64(lock, 1<<32|9) // by slot 9, which nobody holds
	if _, ok := z.LoadRecord(5); ok {
		t.Errorf("LoadRecord(5) of a record left mid-write found it")
	}
	if err := z.StoreRecord(6, words(6)); err != nil {
		t.Fatalf("StoreRecord after a dead writer = %v", err)
	}
	if _, ok := z.LoadRecord(5); ok {
		t.Errorf("LoadRecord(5) found the dead writer's half-written record")
	}
	if r, ok := z.LoadRecord(6); !ok || r.Data != words(6) {
		t.Errorf("LoadRecord(6) = %v, %v, want data 6", r.Data, ok)
	}
	if *lock != 0 {
		t.Errorf("lock word = %#x after StoreRecord, want 0", *lock)
	}
}

// TestRegistryReadOnlyConsistent: a read-only reader copies a record that
// another process rewrites without pause, and every copy is one write's.
func TestRegistryReadOnlyConsistent(t *testing.T) {
	path := tempZone(t)
	makeZone(t, path)
	const n = 20000
	cmd := helperCommand(t, "regwrite", path, strconv.Itoa(n))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ro := mustOpen(t, path, Options{ReadOnly: true})
	reads := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			r, ok := ro.LoadRecord(7)
			if !ok || r.Data != words(n) {
				t.Fatalf("LoadRecord(7) at the end = %v, %v, want data %d", r.Data, ok, n)
			}
			t.Logf("%d reads", reads)
			return
		default:
		}
		if r, ok := ro.LoadRecord(7); ok {
			reads++
			if r.Data != words(r.Data[0]) {
				t.Fatalf("LoadRecord(7) = %v: words of two writes", r.Data)
			}
		}
	}
}

// regWrite is the helper of TestRegistryReadOnlyConsistent.
func regWrite(path string, n int) int {
	z, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer z.Close()
	for v := 1; v <= n; v++ {
		if err := z.StoreRecord(7, words(uint64(v))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func TestRegistryUpdate(t *testing.T) {
	z := mustOpen(t, tempZone(t), small)
	add := func(d *[RecordWords]uint64, found bool) bool {
		d[0]++
		return true
	}
	for range 3 {
		if err := z.UpdateRecord(4, add); err != nil {
			t.Fatalf("UpdateRecord(4) = %v", err)
		}
	}
	if r, _ := z.LoadRecord(4); r.Data[0] != 3 {
		t.Errorf("record 4 after 3 adds = %d, want 3", r.Data[0])
	}
	g := z.Generation()
	if err := z.UpdateRecord(5, func(*[RecordWords]uint64, bool) bool { return false }); err != nil {
		t.Fatalf("UpdateRecord that changes nothing = %v", err)
	}
	if _, ok := z.LoadRecord(5); ok || z.Generation() != g {
		t.Errorf("UpdateRecord that changes nothing stored a record or moved the generation")
	}
}
