package dict

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A shard whose slab header was overwritten is restored from the zone's
// geometry and its descriptors when the zone is opened: no key is lost, in
// that shard or any other.
func TestOpenRestoresSlabHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z")
	d, err := Open(path, Options{Size: 1 << 20, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := 0; i < n; i++ {
		if err := d.SafeSet(fmt.Sprintf("key%d", i), Int(int64(i)), 0, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	h := d.Header()
	off := h.ShardOff + int64(arenaOffset(h.IndexSize, int(h.ShardSize))) // shard 0's slab header
	d.Close()

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("garbage header bytes"), off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	d, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(zone with a corrupt slab header) = %v", err)
	}
	defer d.Close()
	if err := d.Check(); err != nil {
		t.Fatalf("Check after restore: %v", err)
	}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key%d", i)
		v, flags, err := d.Get(k)
		if err != nil || v.Int() != int64(i) || flags != uint32(i) {
			t.Fatalf("Get(%q) = %v, %d, %v; want %d, %d", k, v, flags, err, i, i)
		}
	}
	if got := d.ShardStats(0).Recoveries; got != 1 {
		t.Fatalf("shard 0 Recoveries = %d, want 1", got)
	}
}
