package dict_test

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// walkRounds is how many times TestReadOnlyWalkLive reads the zone entry by
// entry while the writers run.
var walkRounds = 300

func init() {
	if raceEnabled {
		walkRounds = 100
	}
}

// TestReadOnlyWalkLive reads a zone that two processes write as fast as
// they can entry by entry (walkLive), as Keys and Scan read a shard that
// keeps changing. Every read must succeed, report no key twice, and report
// every bytes value, and every list element, as one whole write. Once the
// writers stop, the entry-by-entry read and Scan must report the same items.
func TestReadOnlyWalkLive(t *testing.T) {
	seed := testutil.Seed(t)
	path := testutil.TempZone(t)
	w, err := dict.Open(path, dict.Options{Size: liveZoneSize, Shards: liveShards})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ro, err := dict.Open(path, dict.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()

	const writers = 2
	g := testutil.NewGate(t) // opened, it tells the writers to stop
	ready := make(chan int, writers)
	procs := make([]*testutil.Proc, writers)
	for i := range procs {
		cmd := testutil.Helper(t, "live-writer", path, strconv.FormatUint(seed, 10), strconv.Itoa(i))
		g.Attach(cmd)
		procs[i] = testutil.Start(t, cmd, func(line string) {
			if line == liveReady {
				ready <- i
			}
		})
	}
	died := make(chan int, writers)
	for i, p := range procs {
		go func() { <-p.Done(); died <- i }()
	}
	for range procs {
		select {
		case <-ready:
		case i := <-died:
			t.Fatalf("writer %d ended before it was ready: %v", i, procs[i].Wait())
		}
	}

	items := 0
	for n := range walkRounds {
		select {
		case i := <-died:
			t.Fatalf("writer %d ended while the zone was read: %v", i, procs[i].Wait())
		default:
		}
		err := dict.WalkLive(ro, func(it dict.Item) {
			if b := it.Value.Bytes(); it.Value.Kind() == dict.KindBytes && torn(b) >= 0 {
				t.Fatalf("read #%d: %q holds %d bytes %#x then %#x from byte %d on: bytes of two writes",
					n, it.Key, len(b), b[0], b[torn(b)], torn(b))
			}
			for _, e := range it.List {
				if e.Kind() != dict.KindBytes || !uniform(e.Bytes()) {
					t.Fatalf("read #%d: list %q holds %v", n, it.Key, e)
				}
			}
			items++
		})
		if err != nil {
			t.Fatalf("read #%d entry by entry = %v", n, err)
		}
	}
	if items == 0 {
		t.Errorf("the reads reported no key: the zone looked empty")
	}

	g.Open()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	// A view whose clock stands still: both reads see the same keys expired.
	now := time.Now().UnixMilli()
	still, err := dict.Open(path, dict.Options{ReadOnly: true, Clock: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer still.Close()
	walked, scanned := map[string]string{}, map[string]string{}
	if err := dict.WalkLive(still, func(it dict.Item) { walked[it.Key] = itemString(it) }); err != nil {
		t.Fatalf("read entry by entry after the writers = %v", err)
	}
	if err := still.Scan(func(it dict.Item) bool { scanned[it.Key] = itemString(it); return true }); err != nil {
		t.Fatalf("Scan after the writers = %v", err)
	}
	if !reflect.DeepEqual(walked, scanned) {
		for k, v := range scanned {
			if walked[k] != v {
				t.Errorf("key %q: read entry by entry %q, Scan %q", k, walked[k], v)
			}
		}
		t.Fatalf("read entry by entry: %d keys, Scan %d", len(walked), len(scanned))
	}
}

// itemString is what TestReadOnlyWalkLive compares of an item.
func itemString(it dict.Item) string {
	s := fmt.Sprintf("%v %s flags=%d", it.Value.Kind(), it.Value, it.Flags)
	for _, e := range it.List {
		s += fmt.Sprintf(" [%s]", e)
	}
	return s
}
