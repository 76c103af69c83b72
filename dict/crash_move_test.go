package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestCrashMove kills helpers that spend most of their time moving
// counters between the pages of two views of the zone (move.go), which
// increment them in turn. A helper is killed once it has done crashMinOps
// operations. A move that a kill cuts short loses nothing, as
// the next locker's repair keeps whichever copy the index reaches. The
// counters must hold every acknowledged increment and at most those in
// flight, and the zone must pass Check.
func TestCrashMove(t *testing.T) {
	kills := crashKills(t, crashDefaultKills)
	seed := testutil.Seed(t)
	path, d := openCrashCounters(t)
	dir := t.TempDir()
	// The helpers' clock, shared, so that no helper's starts behind the
	// last try to move of one killed before it (triedSince).
	clock := filepath.Join(dir, "clock")
	if err := os.WriteFile(clock, binary.NativeEndian.AppendUint64(nil, 1_700_000_000_000), 0o600); err != nil {
		t.Fatal(err)
	}
	var total moveTally
	hammered := killRounds(t, crashSlots, kills, seed, 0, &total, func(n int, r *rand.Rand, mine *moveTally) error {
		ack := filepath.Join(dir, fmt.Sprintf("ack-%d", n))
		moving := filepath.Join(dir, fmt.Sprintf("moving-%d", n))
		for _, f := range []struct {
			path string
			size int
		}{{ack, ackSize}, {moving, 8}} {
			if err := os.WriteFile(f.path, make([]byte, f.size), 0o600); err != nil {
				return err
			}
		}
		err := crashKill(t, testutil.Helper(t, "crash-move", path, ack, moving, clock,
			strconv.FormatUint(seed, 10), strconv.Itoa(crashSlots+n)), r, crashMaxDelay)
		if err != nil {
			return err
		}
		mine.kills++
		if err := mine.readAck(ack); err != nil {
			return err
		}
		b, err := os.ReadFile(moving)
		if err != nil {
			return err
		}
		if binary.NativeEndian.Uint64(b) != 0 {
			mine.inMove++
		}
		return removeFiles(ack, moving)
	})
	st := crashStats(t, d)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	checkCrashCounters(t, d, &total.crashTally)
	// Every helper tried crashMinOps moves of counters the parent made
	// before it could be killed. How many kills land inside a move is the
	// scheduler's: the log gives it.
	if st.Moves == 0 {
		t.Errorf("no move in %d operations of %d helpers", total.ops, total.kills)
	}
	if keys, err := d.Keys(0); err != nil || len(keys) != crashCounters {
		t.Errorf("Keys(0) = %d keys, %v, want the %d counters, each once", len(keys), err, crashCounters)
	}
	t.Logf("%d kills in %v, %d inside MoveToOwn: %d ops, %d moves, %d recoveries",
		total.kills, hammered, total.inMove, total.ops, st.Moves, st.Recoveries)
}

// moveTally is crashTally with the kills that landed inside MoveToOwn.
type moveTally struct {
	crashTally
	inMove int
}

func (m *moveTally) add(o *moveTally) {
	m.crashTally.add(&o.crashTally)
	m.inMove += o.inMove
}

// removeFiles removes the files at paths.
func removeFiles(paths ...string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// helperMove is TestCrashMove's helper, with arguments path, ack file,
// moving file, clock file, seed and stream: it opens the zone twice, as two
// processes would, on the clock file's word, which moves a millisecond at
// each read (so that no move waits for the next millisecond), and in turns
// increments a counter with one view and moves another to that view's
// pages, with the moving file's word set while it calls MoveToOwn.
func helperMove(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("want path, ack file, moving file, clock file, seed and stream, got %q", args)
	}
	seed, err1 := strconv.ParseUint(args[4], 10, 64)
	stream, err2 := strconv.ParseUint(args[5], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad seed or stream in %q", args)
	}
	ms, err := mapFile(args[3], 8)
	if err != nil {
		return err
	}
	clock := func() int64 { return int64(atomic.AddUint64(word64(ms, 0), 1)) }
	var views [2]*dict.Dict
	for i := range views {
		d, err := dict.Open(args[0], dict.Options{Clock: clock})
		if err != nil {
			return err
		}
		views[i] = d
	}
	ack, err := mapFile(args[1], ackSize)
	if err != nil {
		return err
	}
	moving, err := mapFile(args[2], 8)
	if err != nil {
		return err
	}
	inMove := word64(moving, 0)
	h := newHammer(views[0], seed, stream, ack)
	r := h.r
	for i := 0; ; i++ {
		if i == crashMinOps {
			fmt.Println(readyLine) // killed among moves, never before its first
		}
		h.d = views[i&1]
		// A shard held past the lock timeout, by a process rebuilding it
		// after a kill on a loaded machine, changed nothing: go on.
		if err := h.incr(r.IntN(crashCounters), false); err != nil && !errors.Is(err, dict.ErrLockTimeout) {
			return err
		}
		atomic.StoreUint64(inMove, 1)
		dict.MoveToOwn(h.d, crashCounterKey(r.IntN(crashCounters)))
		atomic.StoreUint64(inMove, 0)
		atomic.AddUint64(h.ops, 1)
	}
}
