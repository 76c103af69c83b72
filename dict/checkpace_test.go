package dict

import (
	"fmt"
	"testing"
)

// TestCheckMovesSeq: Check and Repair check a whole shard under its lock:
// they walk the index's entries, the queue, its segments, the slab's
// chunks and a list's nodes. The walks move Seq by 2 every walkStep
// entries, chunks or nodes (advance), so that the lock's waiters see the
// holder's work go on and do not time out, whatever the shard's size.
// Check also looks at every bucket for an entry a dead writer left
// (settleDeadInShard), which moves Seq every walkStep buckets. A hold
// without advances moves Seq by 2 in all: odd at the lock, even at the
// unlock.
func TestCheckMovesSeq(t *testing.T) {
	const (
		keys  = 8 * walkStep
		nodes = 2 * walkStep
	)
	d, _ := openTest(t, Options{Size: 4 << 20, Shards: 1})
	for i := range keys {
		specSet(t, d, fmt.Sprintf("pace-%05d", i), Int(int64(i)), 0, 0)
	}
	for i := range nodes {
		if _, err := d.RPush("pace-list", Int(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	s := &d.shards[0]
	// Four walks of keys entries each, and the list's nodes.
	check := 4*keys/walkStep + nodes/walkStep
	for _, op := range []struct {
		name string
		want int
		do   func() error
	}{
		{"Check", len(s.index)/walkStep + check, d.Check},
		{"Repair", check, func() error {
			n, err := d.Repair()
			if err == nil && n != 0 {
				err = fmt.Errorf("rebuilt %d shards of a sound zone", n)
			}
			return err
		}},
	} {
		before := s.seq()
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if moved := int(s.seq()-before)/2 - 1; moved < op.want {
			t.Errorf("%s of a shard of %d entries, %d list nodes and %d buckets moved Seq %d times, want at least %d: one every walkStep (%d)", op.name, keys+1, nodes, len(s.index), moved, op.want, walkStep)
		}
	}
}
