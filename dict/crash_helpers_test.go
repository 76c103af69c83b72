package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmzone/shmzone/dict"
)

// The helper-process bodies of the crash tests (crash_test.go), run through
// TestHelperProcess: helperHammer and helperHoldLock.

// crashValueSize picks a value size: mostly small, some of several slab
// classes, a few page runs.
func crashValueSize(r *rand.Rand) int {
	switch x := r.IntN(10); {
	case x < 6:
		return 1 + r.IntN(64)
	case x < 9:
		return 64 + r.IntN(2000)
	default:
		return 2048 + r.IntN(crashMaxValue-2048)
	}
}

// helperHammer is one process of TestCrashKill: args are the zone path, the
// ack file, the test's seed, the helper's stream of it and its role
// (crashRole). It writes until it is killed, and fails on any result a
// sound zone cannot give. It prints readyLine once it has done crashMinOps
// operations. The witness goes on until Stats shows an entry moved
// (move.go). Then it prints readyLine from inside a shard's lock, and
// waits there to be killed.
func helperHammer(args []string) error {
	d, ack, seed, stream, witness, err := openCrashHelper(args, ackSize)
	if err != nil {
		return err
	}
	h := newHammer(d, seed, stream, ack)
	for ops := 0; ; {
		err := h.step()
		if errors.Is(err, dict.ErrLockTimeout) {
			// A shard held past the lock timeout, by a process that is
			// rebuilding it after a kill on a loaded machine: the
			// operation changed nothing (the acknowledged counts check
			// that), so go on to the next.
			continue
		}
		if err != nil {
			return err
		}
		atomic.AddUint64(h.ops, 1)
		ops++
		switch {
		case ops < crashMinOps:
		case !witness:
			if ops == crashMinOps {
				fmt.Println(readyLine)
			}
		case ops%crashStatsEvery == 0 && d.Stats().Moves > 0:
			return holdShardLock(d, crashValueKey(h.r.IntN(crashValues)))
		}
	}
}

// hammer is the state of one helperHammer process.
type hammer struct {
	d        *dict.Dict
	r        *rand.Rand
	inflight *uint64   // in the ack file
	ops      *uint64   // in the ack file
	acked    []*uint64 // in the ack file
	last     []int64   // the last sum seen per counter: sums only grow
}

// newHammer returns a hammer of d that draws from the seed's stream and
// acknowledges in ack.
func newHammer(d *dict.Dict, seed, stream uint64, ack []byte) *hammer {
	h := &hammer{
		d:        d,
		r:        rand.New(rand.NewPCG(seed, stream)),
		inflight: word64(ack, ackInflight),
		ops:      word64(ack, ackOps),
		last:     make([]int64, crashCounters),
	}
	for k := 0; k < crashCounters; k++ {
		h.acked = append(h.acked, word64(ack, ackCounts+8*k))
	}
	return h
}

// step does one random operation.
func (h *hammer) step() error {
	d, r := h.d, h.r
	x := r.IntN(100)
	switch {
	case x < 40:
		return h.incr(r.IntN(crashCounters), x < 20)
	case x < 66:
		return h.write(r.IntN(crashValues), x)
	case x < 72:
		return h.mutate(crashMutateKey(r.IntN(crashMutates)), x < 70)
	case x < 80:
		k := r.IntN(crashValues)
		key := crashValueKey(k)
		v, _, err := d.Get(key)
		switch {
		case errors.Is(err, dict.ErrNotFound):
		case err != nil:
			return fmt.Errorf("Get(%q) = %w", key, err)
		case v.Kind() == dict.KindInt && v.Int() != int64(k):
			return fmt.Errorf("Get(%q) = %d, want %d", key, v.Int(), k)
		case v.Kind() == dict.KindBytes:
			return checkCrashValue(key, v.Bytes())
		}
		return nil
	default:
		return h.list(crashListKey(r.IntN(crashLists)), x < 90)
	}
}

// mutate adds one to every word of a state key with Mutate (creating it
// when absent), or reads it; either way the state it meets must be whole:
// a process killed inside Mutate's function loses the key, never leaves it
// torn, and a reader never sees a write half done.
func (h *hammer) mutate(key string, write bool) error {
	return mutateState(h.d, key, write, nil)
}

// mutateState is a crash helper's mutate: a read, or Mutate adding one to
// every word, either of which must meet the state whole. A write that
// fails with an error noRoom takes (nil: none) returns noRoom's answer.
func mutateState(d *dict.Dict, key string, write bool, noRoom func(error) error) error {
	if !write {
		v, _, err := d.Get(key)
		switch {
		case errors.Is(err, dict.ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("Get(%q) = %w", key, err)
		}
		return checkCrashState(key, v.Bytes())
	}
	var torn error
	err := d.Mutate(key, crashStateSize, 0, func(b []byte, found bool) bool {
		if found {
			torn = checkCrashState(key, b)
		}
		for i := 0; i < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])+1)
		}
		return true
	})
	if noRoom != nil && (errors.Is(err, dict.ErrNoMemory) || errors.Is(err, dict.ErrLockTimeout)) {
		return noRoom(err)
	}
	if err != nil {
		return fmt.Errorf("Mutate(%q) = %w", key, err)
	}
	return torn
}

// incr increments counter k by one, with Incr or IncrInit, and acknowledges
// it in the ack file.
func (h *hammer) incr(k int, init bool) error {
	key := crashCounterKey(k)
	atomic.StoreUint64(h.inflight, uint64(k)+1)
	var n int64
	var err error
	if init {
		var forcible bool
		n, forcible, err = h.d.IncrInit(key, 1, 0, 0)
		if err == nil && forcible {
			err = errors.New("evicted")
		}
	} else {
		n, err = h.d.Incr(key, 1)
	}
	if errors.Is(err, dict.ErrLockTimeout) {
		atomic.StoreUint64(h.inflight, 0) // it changed nothing
	}
	if err != nil {
		return fmt.Errorf("increment %q: %w", key, err)
	}
	atomic.AddUint64(h.acked[k], 1)
	atomic.StoreUint64(h.inflight, 0)
	if n <= h.last[k] {
		return fmt.Errorf("increment %q = %d after %d", key, n, h.last[k])
	}
	h.last[k] = n
	return nil
}

// write sets, adds, replaces or deletes value key k; x picks which.
func (h *hammer) write(k, x int) error {
	d, r := h.d, h.r
	key := crashValueKey(k)
	v := dict.Bytes(crashValue(key, crashValueSize(r)))
	if r.IntN(4) == 0 { // an int over an int is rewritten in place, under the entry's lock
		v = dict.Int(int64(k))
	}
	var forcible bool
	var err error
	switch {
	case x < 50:
		forcible, err = d.Set(key, v, 0, 0)
	case x < 56:
		err = d.SafeSet(key, v, 0, 0)
	case x < 60:
		forcible, err = d.Add(key, v, 0, 0)
		if errors.Is(err, dict.ErrExists) {
			err = nil
		}
	case x < 62:
		err = d.SafeAdd(key, v, 0, 0)
		if errors.Is(err, dict.ErrExists) {
			err = nil
		}
	case x < 66:
		forcible, err = d.Replace(key, v, 0, 0)
		if errors.Is(err, dict.ErrNotFound) {
			err = nil
		}
	default:
		err = d.Delete(key)
	}
	if err == nil && forcible {
		err = errors.New("evicted")
	}
	if err != nil {
		return fmt.Errorf("write %q (%d): %w", key, x, err)
	}
	return nil
}

// list pushes to (push) or pops from list key, at either end; it pops when
// the list is long.
func (h *hammer) list(key string, push bool) error {
	d, r := h.d, h.r
	if push {
		n, err := d.LLen(key)
		if err != nil {
			return fmt.Errorf("LLen(%q) = %w", key, err)
		}
		push = n < crashListMax
	}
	left := r.IntN(2) == 0
	if push {
		v := dict.Bytes(crashValue(key, 1+r.IntN(600)))
		var err error
		if left {
			_, err = d.LPush(key, v)
		} else {
			_, err = d.RPush(key, v)
		}
		if err != nil {
			return fmt.Errorf("push %q: %w", key, err)
		}
		return nil
	}
	var v dict.Value
	var err error
	if left {
		v, err = d.LPop(key)
	} else {
		v, err = d.RPop(key)
	}
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("pop %q: %w", key, err)
	}
	return checkCrashValue(key, v.Bytes())
}

// helperHoldLock is the helper of TestCrashHoldingLock: args are the zone
// path and shard numbers. It takes those shards' locks, prints "owner W" (its
// lock word) and readyLine, and waits to be killed.
func helperHoldLock(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("want path and shards, got %q", args)
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	self, _ := dict.OwnerWord(d)
	for _, a := range args[1:] {
		i, err := strconv.Atoi(a)
		if err != nil {
			return err
		}
		dict.LockShard(d, i)
		if o := *dict.ShardLock(d, i); o != self {
			return fmt.Errorf("shard %d lock word %#x after Lock, want %#x", i, o, self)
		}
	}
	fmt.Printf("owner %d\n", self)
	fmt.Println(readyLine)
	for {
		time.Sleep(time.Hour)
	}
}

// crashWitness is the number of the helper of a crash test that is its
// witness. The witness signals readiness only once it has seen the events
// that the test's checks of the run need. It is killed holding a shard's
// lock (holdShardLock).
const crashWitness = 1

// crashRole returns the role argument of crash helper n.
func crashRole(n int) string {
	if n == crashWitness {
		return "witness"
	}
	return "hammer"
}

// openCrashHelper opens what a crash helper's args (zone path, ack file,
// seed, stream, role) name: the zone, and the ack file of size bytes mapped
// shared, so that every store made before a SIGKILL is in the file.
// witness reports the role crashRole gives the witness.
func openCrashHelper(args []string, size int) (d *dict.Dict, ack []byte, seed, stream uint64, witness bool, err error) {
	if len(args) != 5 {
		return nil, nil, 0, 0, false, fmt.Errorf("want path, ack file, seed, stream and role, got %q", args)
	}
	if seed, err = strconv.ParseUint(args[2], 10, 64); err != nil {
		return nil, nil, 0, 0, false, err
	}
	if stream, err = strconv.ParseUint(args[3], 10, 64); err != nil {
		return nil, nil, 0, 0, false, err
	}
	witness = args[4] == crashRole(crashWitness)
	if d, err = dict.Open(args[0], dict.Options{}); err != nil {
		return nil, nil, 0, 0, false, err
	}
	ack, err = mapFile(args[1], size)
	return d, ack, seed, stream, witness, err
}

// holdShardLock prints readyLine from inside an update of key, which holds
// the lock of key's shard, and waits there to be killed. The kill leaves
// the lock to a dead owner: the next process to take it rebuilds the shard
// and counts a recovery. holdShardLock returns only an error.
func holdShardLock(d *dict.Dict, key string) error {
	for {
		err := dict.UpdateLocked(d, key, func(dict.Value, bool) (dict.Value, time.Duration, bool) {
			fmt.Println(readyLine)
			for {
				time.Sleep(time.Hour)
			}
		})
		// A shard held past the lock timeout, by a process rebuilding it
		// after a kill on a loaded machine: try again.
		if !errors.Is(err, dict.ErrLockTimeout) {
			return fmt.Errorf("UpdateLocked(%q) = %v, want to be killed inside it", key, err)
		}
	}
}

// mapFile maps the first size bytes of the file at path, shared.
func mapFile(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
