package dict_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What the crash tests' helpers and the tests share: the keys, the values
// (written whole, checked whole) and the ack file with its tally.

func crashCounterKey(k int) string { return fmt.Sprintf("ctr-%02d", k) }
func crashValueKey(k int) string   { return fmt.Sprintf("val-%03d", k) }
func crashListKey(k int) string    { return fmt.Sprintf("list-%d", k) }
func crashMutateKey(k int) string  { return fmt.Sprintf("mut-%02d", k) }

// crashStateSize is the size of a Mutate state: words that every Mutate
// increments together, so that a torn state has unequal words.
const crashStateSize = 64

// checkCrashState reports whether a Mutate state is whole: every word equal.
func checkCrashState(key string, b []byte) error {
	if len(b) != crashStateSize {
		return fmt.Errorf("state of %q has %d bytes, want %d", key, len(b), crashStateSize)
	}
	first := binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i += 8 {
		if w := binary.LittleEndian.Uint64(b[i:]); w != first {
			return fmt.Errorf("state of %q is torn: word 0 is %d, word %d is %d", key, first, i/8, w)
		}
	}
	return nil
}

// An ack file is a helper's record of what it has done, written through a
// shared mapping, so that every store made before a SIGKILL is in the file
// afterwards. Words of 8 bytes, native order:
//
//	0          8      16
//	+----------+------+------------------------------+
//	| inflight | ops  | acked [crashCounters]uint64  |
//	+----------+------+------------------------------+
//
// inflight is 1 + the counter being incremented, 0 between increments: the
// helper sets it before Incr and clears it after it has counted the
// increment in acked.
const (
	ackInflight = 0
	ackOps      = 8
	ackCounts   = 16
	ackSize     = ackCounts + 8*crashCounters
)

// crashValue returns the n-byte value of key: a header naming the key and
// the length, then a filler byte derived from the length, so that a torn or
// misplaced value is recognised. n is raised to the header's length.
func crashValue(key string, n int) []byte {
	b := fmt.Appendf(nil, "%s/%d/", key, n)
	for len(b) < n {
		b = append(b, byte('a'+n%26))
	}
	return b
}

// checkCrashValue reports whether v is a whole value written for key.
func checkCrashValue(key string, v []byte) error {
	rest, ok := strings.CutPrefix(string(v), key+"/")
	if !ok {
		return fmt.Errorf("value of %q starts %q", key, v[:min(len(v), 40)])
	}
	ns, _, ok := strings.Cut(rest, "/")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil {
		return fmt.Errorf("value of %q has no length: %q", key, v[:min(len(v), 40)])
	}
	if want := crashValue(key, n); string(v) != string(want) {
		return fmt.Errorf("value of %q: %d bytes differ from the %d written", key, len(v), len(want))
	}
	return nil
}

// crashTally sums what the killed helpers acknowledged.
type crashTally struct {
	kills      int
	ops        uint64
	witnessOps uint64 // the witness's operations
	acked      [crashCounters]uint64
	inflight   [crashCounters]uint64
}

func (c *crashTally) add(o *crashTally) {
	c.kills += o.kills
	c.ops += o.ops
	c.witnessOps += o.witnessOps
	for k := range c.acked {
		c.acked[k] += o.acked[k]
		c.inflight[k] += o.inflight[k]
	}
}

// readAck adds a dead helper's ack file to c.
func (c *crashTally) readAck(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(b) != ackSize {
		return fmt.Errorf("ack file %s has %d bytes, want %d", path, len(b), ackSize)
	}
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	if f := word(ackInflight); f != 0 {
		if f > crashCounters {
			return fmt.Errorf("ack file %s: in flight %d", path, f)
		}
		c.inflight[f-1]++
	}
	c.ops += word(ackOps)
	for k := range c.acked {
		c.acked[k] += word(ackCounts + 8*k)
	}
	return nil
}
