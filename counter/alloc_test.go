package counter_test

import (
	"testing"
)

// TestHotPathsAllocateNothing proves that Incr of a key the Counter holds
// and Handle.Add allocate nothing, including the increment that puts a key
// back on the pending list after a Sync.
func TestHotPathsAllocateNothing(t *testing.T) {
	c, _ := newCounter(t)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = key(i)
	}
	h := c.Key("hot")
	// Two rounds give both pending lists room for every key.
	for round := 0; round < 2; round++ {
		for _, k := range keys {
			c.Incr(k, 1)
		}
		mustSync(t, c)
	}
	tests := []struct {
		name string
		fn   func(i int)
	}{
		{"Incr", func(i int) { c.Incr(keys[i%len(keys)], 1) }},
		{"Handle.Add", func(int) { h.Add(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := 0
			if n := testing.AllocsPerRun(5000, func() { tt.fn(i); i++ }); n != 0 {
				t.Errorf("%s allocates %v times per call, want 0", tt.name, n)
			}
		})
	}
}
