//go:build dicthooks

package dict

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// walkStepKeys is how many keys TestWalkStep writes: many steps' worth.
const walkStepKeys = 10 * walkStep

// TestWalkStep walks a shard of many entries with each walk of a whole
// shard. Each step, one hold of the shard's lock, must visit walkStep
// entries at most, and a walk must take several. A shard that nobody
// changes between steps is walked oldest first, as in one hold.
func TestWalkStep(t *testing.T) {
	d, c := openTest(t, Options{Size: 4 << 20, Shards: 1})
	var want []string
	for i := range walkStepKeys {
		k := fmt.Sprintf("walk-%05d", i)
		ttl := time.Duration(0)
		if i%4 == 3 {
			ttl = time.Second // expired below
		} else {
			want = append(want, k)
		}
		specSet(t, d, k, Int(int64(i)), ttl, 0)
	}
	c.Advance(2 * time.Second)
	walks := []struct {
		name string
		walk func() (int, error)
	}{
		{"Keys", func() (int, error) {
			keys, err := d.Keys(0)
			if err == nil && !slices.Equal(keys, want) {
				t.Errorf("Keys(0) = %d keys, want the %d live ones oldest first", len(keys), len(want))
			}
			return len(keys), err
		}},
		{"Scan", func() (int, error) {
			var keys []string
			err := d.Scan(func(it Item) bool { keys = append(keys, it.Key); return true })
			if err == nil && !slices.Equal(keys, want) {
				t.Errorf("Scan = %d keys, want the %d live ones oldest first", len(keys), len(want))
			}
			return len(keys), err
		}},
		{"KeysWithPrefix", func() (int, error) {
			keys, err := d.KeysWithPrefix("walk-")
			slices.Sort(keys)
			if err == nil && !slices.Equal(keys, want) {
				t.Errorf("KeysWithPrefix = %d keys, want the %d live ones", len(keys), len(want))
			}
			return len(keys), err
		}},
		{"FlushExpired", func() (int, error) { return d.FlushExpired(0) }},
	}
	for _, w := range walks {
		t.Run(w.name, func(t *testing.T) {
			var steps []int
			walkSteps = &steps
			defer func() { walkSteps = nil }()
			n, err := w.walk()
			if err != nil {
				t.Fatalf("%s = %d, %v", w.name, n, err)
			}
			visited := 0
			for _, v := range steps {
				visited += v
				if v > walkStep {
					t.Errorf("%s: a step visited %d entries, want at most walkStep, %d", w.name, v, walkStep)
				}
			}
			if len(steps) < walkStepKeys/walkStep {
				t.Errorf("%s took %d steps, want %d or more", w.name, len(steps), walkStepKeys/walkStep)
			}
			if visited < walkStepKeys {
				t.Errorf("%s visited %d entries in all, want %d", w.name, visited, walkStepKeys)
			}
			t.Logf("%s: %d keys in %d steps, %d entries visited, the most in a step %d", w.name, n, len(steps), visited, slices.Max(steps))
		})
	}
	if n, err := d.FlushExpired(0); n != 0 || err != nil {
		t.Errorf("FlushExpired(0) again = %d, %v; want 0", n, err)
	}
	if st := d.Stats(); st.Entries != int64(len(want)) {
		t.Errorf("Stats().Entries = %d, want %d", st.Entries, len(want))
	}
}
