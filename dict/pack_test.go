package dict_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestPackBeforeEvict: in a shard whose pages all hold entries of one size,
// half of them removed, a value of another size finds no page with room
// and no free page; SafeSet and Set still store it, by moving the entries
// of one page into the others' free chunks, and nothing is evicted.
func TestPackBeforeEvict(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 256 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	small := dict.Bytes(make([]byte, 40))
	n := 0
	for ; ; n++ {
		err := d.SafeSet(fmt.Sprintf("k%05d", n), small, 0, 0)
		if errors.Is(err, dict.ErrNoMemory) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 2 {
		if err := d.Delete(fmt.Sprintf("k%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	free := d.Stats().FreeSpace
	for i, size := range []int{200, 600, 1500} {
		key := fmt.Sprintf("big%d", i)
		v := dict.Bytes(make([]byte, size))
		if i%2 == 0 {
			err = d.SafeSet(key, v, 0, 0)
		} else {
			var forcible bool
			forcible, err = d.Set(key, v, 0, 0)
			if forcible {
				t.Errorf("Set(%q, %d bytes) evicted, with %d bytes free in pages of another size", key, size, free)
			}
		}
		if err != nil {
			t.Fatalf("storing %q, %d bytes, with %d bytes free in pages of another size: %v", key, size, free, err)
		}
	}
	if st := d.Stats(); st.Evictions != 0 {
		t.Errorf("Stats().Evictions = %d, want 0", st.Evictions)
	}
	for i := 1; i < n; i += 2 {
		key := fmt.Sprintf("k%05d", i)
		if _, _, err := d.Get(key); err != nil {
			t.Fatalf("Get(%q) = %v", key, err)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}
