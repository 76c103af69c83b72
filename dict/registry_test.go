package dict

import (
	"errors"
	"testing"

	"github.com/shmzone/shmzone/shm"
)

// TestRegistryPassThrough: the zone's registry through a Dict, with the
// Dict's errors for a read-only view and after Close. FlushAll leaves it.
func TestRegistryPassThrough(t *testing.T) {
	d, _ := openTest(t, Options{})
	g := d.Generation()
	if err := d.UpdateRecord(3, func(w *[shm.RecordWords]uint64, found bool) bool {
		w[0] = 30
		return true
	}); err != nil {
		t.Fatalf("UpdateRecord(3) = %v", err)
	}
	if d.Generation() != g+1 {
		t.Errorf("Generation() = %d after a write, want %d", d.Generation(), g+1)
	}
	if err := d.FlushAll(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(d.Path(), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if r, ok, err := ro.LoadRecord(3); !ok || err != nil || r.Data[0] != 30 {
		t.Errorf("read-only LoadRecord(3) after FlushAll = %v, %v, %v; want data 30", r.Data, ok, err)
	}
	if rs, err := ro.Records(); len(rs) != 1 || err != nil {
		t.Errorf("read-only Records() = %v, %v; want one record", rs, err)
	}
	if _, err := ro.DeleteRecord(3); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only DeleteRecord = %v, want ErrReadOnly", err)
	}
	if err := ro.BumpGeneration(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only BumpGeneration = %v, want ErrReadOnly", err)
	}
	if ok, err := d.DeleteRecord(3); !ok || err != nil {
		t.Errorf("DeleteRecord(3) = %v, %v; want true, nil", ok, err)
	}
	d.Close()
	if _, _, err := d.LoadRecord(3); !errors.Is(err, ErrClosed) {
		t.Errorf("LoadRecord after Close = %v, want ErrClosed", err)
	}
	if g := d.Generation(); g != 0 {
		t.Errorf("Generation() after Close = %d, want 0", g)
	}
}
