package dict_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Reads that take no lock, racing with writers of the same keys. Every
// value the writers store is one byte repeated, so a torn read shows as
// bytes of two writes. A read that takes a shard's lock moves the shard's
// Seq by 2, and one that takes no lock leaves it: Seq tells how many
// operations took the lock.

const (
	optKeys    = 24  // keys of each kind
	optBytes   = 100 // the length of a bytes value: 12 words and a tail
	optMutSize = 61  // the length of a Mutate state, written byte by byte
	optShards  = 2
	optReaders = 3
	optWriters = 2
)

// optGets is how many Gets each reader makes; fewer under the race
// detector, which slows every operation.
var optGets = 20_000

func init() {
	if raceEnabled {
		optGets = 4_000
	}
}

// optKey returns key i of kind k: "b" bytes, "n" an int, "m" a Mutate
// state.
func optKey(k string, i int) string { return fmt.Sprintf("opt-%s-%02d", k, i) }

// optInt returns the int whose 8 bytes are all c.
func optInt(c byte) int64 { return int64(uint64(c) * 0x0101010101010101) }

// optWrite makes one write of round n: a value of the same length as the
// key's, written in place.
func optWrite(d *dict.Dict, n int) error {
	c := byte(1 + n%255)
	i := n / 3 % optKeys
	switch n % 3 {
	case 0:
		_, err := d.Set(optKey("b", i), dict.Bytes(fill(c, optBytes)), 0, 0)
		return err
	case 1:
		_, err := d.Set(optKey("n", i), dict.Int(optInt(c)), 0, 0)
		return err
	}
	return d.Mutate(optKey("m", i), optMutSize, 0, func(b []byte, found bool) bool {
		for j := range b {
			b[j] = c
		}
		return true
	})
}

// TestOptimisticGetsUnderWriters: readers Get and GetInto keys that
// goroutines of this process and a second process write in place all the
// while. No read may return a torn value, and most Gets must complete
// without the shard's lock: were the reads that take no lock switched off,
// as under the race detector they once were, each Get would move Seq.
func TestOptimisticGetsUnderWriters(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: optShards})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for n := 0; n < 3*optKeys; n++ { // every key of every kind
		if err := optWrite(d, n); err != nil {
			t.Fatal(err)
		}
	}

	g := testutil.NewGate(t)
	ready := make(chan struct{}, 1)
	cmd := testutil.Helper(t, "opt-writer", path)
	g.Attach(cmd)
	proc := testutil.Start(t, cmd, func(line string) {
		if line == readyLine {
			ready <- struct{}{}
		}
	})
	select {
	case <-ready:
	case <-proc.Done():
		t.Fatalf("writer process ended before it was ready: %v", proc.Wait())
	case <-time.After(timeoutHang):
		t.Fatalf("writer process not ready after %v", timeoutHang)
	}

	var seq0 [optShards]uint64
	for i := range seq0 {
		seq0[i] = dict.ShardSeq(d, i)
	}
	var stop atomic.Bool
	var writes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, optReaders+optWriters)
	for w := 0; w < optWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := w; !stop.Load(); n += optWriters {
				if err := optWrite(d, n); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	var readers sync.WaitGroup
	for r := 0; r < optReaders; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			var buf [optBytes]byte
			for n := 0; n < optGets; n++ {
				if err := optRead(d, r+n, buf[:]); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
			}
		}()
	}
	readers.Wait()
	stop.Store(true)
	wg.Wait()
	g.Open()
	if err := proc.Wait(); err != nil {
		t.Fatalf("writer process: %v", err)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	locked := uint64(0)
	for i := range seq0 {
		locked += (dict.ShardSeq(d, i) - seq0[i]) / 2
	}
	gets := uint64(optReaders * optGets)
	if locked >= gets/2 {
		t.Errorf("%d Gets moved Seq by %d locked operations: most Gets took the shard's lock", gets, locked)
	}
	if writes.Load() == 0 {
		t.Errorf("the writers of this process wrote nothing while the readers read")
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	t.Logf("%d Gets, %d writes here, %d operations under a shard's lock in all", gets, writes.Load(), locked)
}

// optRead reads key n%len of one kind, by turns Get and GetInto, and
// checks that its value is one whole write.
func optRead(d *dict.Dict, n int, buf []byte) error {
	i := n / 3 % optKeys
	switch n % 3 {
	case 0:
		key := optKey("b", i)
		v, _, err := d.Get(key)
		if n%2 == 1 {
			v, _, err = d.GetInto(key, buf)
		}
		if err != nil {
			return err
		}
		if b := v.Bytes(); len(b) != optBytes || torn(b) >= 0 {
			return fmt.Errorf("%s holds %x: bytes of two writes", key, b)
		}
	case 1:
		key := optKey("n", i)
		v, _, err := d.Get(key)
		if err != nil {
			return err
		}
		if x := v.Int(); x != optInt(byte(x)) {
			return fmt.Errorf("%s holds %#x: bytes of two writes", key, uint64(x))
		}
	default:
		key := optKey("m", i)
		v, _, err := d.Get(key)
		if err != nil {
			return err
		}
		if b := v.Bytes(); len(b) != optMutSize || torn(b) >= 0 {
			return fmt.Errorf("%s holds %x: bytes of two writes", key, b)
		}
	}
	return nil
}

// helperOptWriter is the writer process of TestOptimisticGetsUnderWriters:
// args are the zone's path. It writes in place until its stdin closes, and
// prints readyLine after its first rounds.
func helperOptWriter(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want the zone's path, got %q", args)
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	var stop atomic.Bool
	go func() {
		testutil.AwaitGate()
		stop.Store(true)
	}()
	for n := 0; !stop.Load(); n++ {
		if n == 300 {
			fmt.Println(readyLine)
		}
		if err := optWrite(d, 7*n+1); err != nil {
			return fmt.Errorf("write %d: %w", n, err)
		}
	}
	return nil
}
