//go:build dicthooks

package dict_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// The helper processes of TestCrashEvict (crash_evict_test.go), their keys,
// their values and their ack files.

// The keys: counters and Mutate states, used all the time; hot values, read
// often (so that their entries are promoted to the protected segment); and
// cold values, many, most written once in a while, some with a TTL: the
// flood that keeps the zone evicting. Keys and values have many lengths,
// so that a shard's pages hold chunks of many sizes.
const (
	evCounters = 16
	evStates   = 8
	evHot      = 48
	evCold     = 3000
	evMaxTTL   = 1000 // ms, the longest TTL of a cold value
	evHotTTL   = 50   // ms, the longest of a hot value: it expires protected
	// evStatsEvery is how many operations a helper does between its
	// Stats calls, which record the most protected entries seen.
	evStatsEvery = 32
	// evMinOps is how many operations a helper does before it signals
	// that it may be killed.
	evMinOps = 50
)

func evCounterKey(k int) string { return evKeys.counters[k] }
func evStateKey(k int) string   { return evKeys.states[k] }
func evHotKey(k int) string     { return evKeys.hot[k] }
func evColdKey(k int) string    { return evKeys.cold[k] }

// evKeys holds every key, made once: the helpers' loops build none.
var evKeys = struct{ counters, states, hot, cold []string }{
	counters: evKeyList(evCounters, func(k int) string { return "ctr" + strconv.Itoa(k) + strings.Repeat("c", k%7) }),
	states:   evKeyList(evStates, func(k int) string { return "st" + strconv.Itoa(k) + strings.Repeat("s", k%5*3) }),
	hot:      evKeyList(evHot, func(k int) string { return "hot" + strconv.Itoa(k) + strings.Repeat("h", k%13) }),
	cold:     evKeyList(evCold, func(k int) string { return "val" + strconv.Itoa(k) + strings.Repeat("-", k%31) }),
}

func evKeyList(n int, key func(k int) string) []string {
	keys := make([]string, n)
	for k := range keys {
		keys[k] = key(k)
	}
	return keys
}

// evValue appends to dst the value that writer w stores under key with a
// TTL of ttl ms (0: none), n bytes long (raised to its header's length): a
// header "key/n/wW/tTTL/", then filler bytes from evFiller at an offset
// drawn from the header's checksum, so that a torn value, a value of
// another key, or a value whose TTL is not the one written with it is
// recognised.
func evValue(dst []byte, key string, n, w, ttl int) []byte {
	start := len(dst)
	b := evHeader(dst, key, n, w, ttl)
	if h := len(b) - start; h < n {
		at := int(crc32.ChecksumIEEE(b[start:]) % evFillerOffsets)
		b = append(b, evFiller[at:at+n-h]...)
	}
	return b
}

// evHeader appends a value's header to dst.
func evHeader(dst []byte, key string, n, w, ttl int) []byte {
	b := append(dst, key...)
	b = strconv.AppendInt(append(b, '/'), int64(n), 10)
	b = strconv.AppendInt(append(b, "/w"...), int64(w), 10)
	b = strconv.AppendInt(append(b, "/t"...), int64(ttl), 10)
	return append(b, '/')
}

// evFiller is the filler of every value: bytes of a fixed pseudo-random
// stream, the same in every process.
var evFiller = func() []byte {
	b := make([]byte, evFillerOffsets+evMaxValue)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
	return b
}()

const (
	evFillerOffsets = 4093 // a prime: the offsets a value's filler may start at
	evMaxValue      = 5100 // the largest value evValueSize picks
)

// checkEvValue reports whether v is a whole value that some writer stored
// under key, and returns that writer and the TTL it gave. It allocates
// only to report a fault.
func checkEvValue(key string, v []byte) (w, ttl int, err error) {
	head := v[:min(len(v), len(key)+30)]
	bad := func(what string) (int, int, error) {
		return 0, 0, fmt.Errorf("value of %q (%d bytes, starting %q): %s", key, len(v), head, what)
	}
	if len(v) <= len(key) || string(v[:len(key)]) != key || v[len(key)] != '/' {
		return bad("not a value of this key")
	}
	var num [3]int
	i := len(key) + 1
	for f, prefix := range [3]byte{0, 'w', 't'} {
		if prefix != 0 {
			if i >= len(v) || v[i] != prefix {
				return bad("no header")
			}
			i++
		}
		j := i
		for j < len(v) && j-i < 9 && '0' <= v[j] && v[j] <= '9' {
			num[f] = num[f]*10 + int(v[j]-'0')
			j++
		}
		if j == i || j >= len(v) || v[j] != '/' {
			return bad("no header")
		}
		i = j + 1
	}
	n, w, ttl := num[0], num[1], num[2]
	var buf [80]byte
	h := evHeader(buf[:0], key, n, w, ttl)
	if string(v[:i]) != string(h) || ttl > evMaxTTL {
		return bad("a bad header")
	}
	if len(v) != max(n, len(h)) {
		return bad(fmt.Sprintf("%d bytes, want %d", len(v), max(n, len(h))))
	}
	at := int(crc32.ChecksumIEEE(h) % evFillerOffsets)
	if string(v[i:]) != string(evFiller[at:at+len(v)-i]) {
		return bad("the filler differs from the one written")
	}
	return w, ttl, nil
}

// evValueSize picks a value size: every small slab class, and a few page
// runs.
func evValueSize(r *rand.Rand) int {
	switch x := r.IntN(100); {
	case x < 45:
		return 1 + r.IntN(100)
	case x < 75:
		return 100 + r.IntN(500)
	case x < 96:
		return 600 + r.IntN(1400)
	default:
		return 2100 + r.IntN(evMaxValue-2100)
	}
}

// An ack file is a helper's record of what it has done, written through a
// shared mapping, so that every store made before a SIGKILL is in the file
// afterwards. Words of 8 bytes, native order, then at evAckLog the page
// clearings' steps (dict.LogClears) not yet counted:
//
//	inflight  1 + the counter being incremented, 0 between increments
//	op        the key of the operation running (evKeyOf), 0 between operations
//	ops       operations done
//	moved     entries moved by page clearings, counted after each operation
//	cleared   pages cleared
//	dropped   entries evicted or expired by page clearings
//	evicting  writes that evicted live entries (forcible)
//	nomem     writes that found no memory (ErrNoMemory): a full zone
//	noroom    ... of them, writes that evict (all but SafeSet)
//	prot      the most protected entries a Stats call saw
//	acked     [evCounters] increments acknowledged
//
// The op word is set with one aligned store once an operation has drawn
// its key, before it touches the zone. A helper killed before that store
// was not inside the operation, and one killed after it reads as inside.
const (
	evAckInflight = 8 * iota
	evAckOp
	evAckOps
	evAckMoved
	evAckCleared
	evAckDropped
	evAckEvicting
	evAckNoMem
	evAckNoRoom
	evAckProt
	evAckCounts
	evAckLog  = 4096 // a page: the log's records hold aligned words
	evAckSize = evAckLog + 1024*dict.ClearRecSize
)

// The words end before the log: a compile-time guard.
var _ [evAckLog - evAckCounts - 8*evCounters]struct{}

func init() { helperProcs["crash-evict"] = helperEvictHammer }

// helperEvictHammer is one process of TestCrashEvict: args are the zone
// path, the ack file, the test's seed, the helper's number, which is its
// stream of the seed and the writer number in its values, and its role
// (crashRole). It writes until it is killed, and fails on any result a
// sound zone cannot give. Once it is ready (evHammer.ready), it prints
// readyLine. The witness prints it from inside a shard's lock instead,
// and waits there to be killed.
func helperEvictHammer(args []string) error {
	d, ack, seed, n, witness, err := openCrashHelper(args, evAckSize)
	if err != nil {
		return err
	}
	w := int(n)
	h := &evHammer{d: d, r: rand.New(rand.NewPCG(seed, uint64(w))), w: w, ack: ack, witness: witness}
	h.expirations = d.Stats().Expirations
	log := dict.LogClears(d, ack[evAckLog:])
	var steps []byte
	ready := false
	for ops := uint64(1); ; ops++ {
		err := h.step()
		atomic.StoreUint64(h.word(evAckOp), 0)
		steps = log.Take(steps[:0])
		for _, c := range steps {
			switch c {
			case dict.StepMoved:
				atomic.AddUint64(h.word(evAckMoved), 1)
			case dict.StepCleared:
				atomic.AddUint64(h.word(evAckCleared), 1)
			default:
				atomic.AddUint64(h.word(evAckDropped), 1)
			}
		}
		switch {
		case errors.Is(err, dict.ErrLockTimeout):
			// A shard held past the lock timeout, by a process that is
			// rebuilding it after a kill on a loaded machine: the
			// operation changed nothing.
			continue
		case errors.Is(err, dict.ErrNoMemory):
			// Eviction found no room in its rounds (a page run in a
			// shard of small pages in use): a full zone, a normal result.
			atomic.AddUint64(h.word(evAckNoMem), 1)
		case err != nil:
			return err
		}
		atomic.AddUint64(h.word(evAckOps), 1)
		if ops%evStatsEvery == 0 {
			st := d.Stats()
			if p := uint64(st.Protected); p > atomic.LoadUint64(h.word(evAckProt)) {
				atomic.StoreUint64(h.word(evAckProt), p)
			}
			h.expired = h.expired || st.Expirations > h.expirations
		}
		if !ready && h.ready() {
			if witness {
				return holdShardLock(d, evHotKey(h.on(evKindHot, h.r.IntN(evHot))))
			}
			fmt.Println(readyLine)
			ready = true
		}
	}
}

// ready reports whether the helper has done what it must before it may be
// killed: evMinOps operations. The witness must also have made a write
// that evicted live entries, cleared a page and moved an entry in a
// clearing. And its Stats calls must have seen a protected entry and an
// expired entry reclaimed since it started.
func (h *evHammer) ready() bool {
	ack := func(off int) uint64 { return atomic.LoadUint64(h.word(off)) }
	if ack(evAckOps) < evMinOps {
		return false
	}
	return !h.witness || ack(evAckEvicting) > 0 && ack(evAckCleared) > 0 && ack(evAckMoved) > 0 &&
		ack(evAckProt) > 0 && h.expired
}

// evHammer is the state of one helperEvictHammer process.
type evHammer struct {
	d   *dict.Dict
	r   *rand.Rand
	w   int    // the writer number in the values
	ack []byte // the ack file's mapping
	buf []byte // the value being written: Set copies it into the zone
	got []byte // the value read: GetInto's buffer

	witness     bool   // the helper is the test's witness (crashWitness)
	expirations uint64 // the zone's Stats().Expirations when it started
	expired     bool   // a later Stats call saw more
}

// word returns the ack file's word at off.
func (h *evHammer) word(off int) *uint64 { return word64(h.ack, off) }

// step does one random operation.
func (h *evHammer) step() error {
	r := h.r
	switch x := r.IntN(100); {
	case x < 25:
		k := h.on(evKindHot, r.IntN(evHot))
		return h.get(evHotKey(k), -1)
	case x < 37:
		return h.incr(h.on(evKindCounter, r.IntN(evCounters)))
	case x < 42:
		k := h.on(evKindCounter, r.IntN(evCounters))
		v, _, err := h.d.Get(evCounterKey(k))
		switch {
		case errors.Is(err, dict.ErrNotFound):
		case err != nil:
			return fmt.Errorf("Get(%q) = %w", evCounterKey(k), err)
		case v.Kind() != dict.KindInt || v.Int() < 1:
			return fmt.Errorf("Get(%q) = %v, want an Int from 1", evCounterKey(k), v)
		}
		return nil
	case x < 48:
		return h.mutate(evStateKey(h.on(evKindState, r.IntN(evStates))), x < 46)
	case x < 56:
		return h.write(evHotKey(h.on(evKindHot, r.IntN(evHot))), -1, 0)
	case x < 90:
		k := h.on(evKindCold, r.IntN(evCold))
		return h.write(evColdKey(k), k, x)
	default:
		k := h.on(evKindCold, r.IntN(evCold))
		return h.get(evColdKey(k), k)
	}
}

// on records in the ack file that the operation about to run is on key k
// of kind, and returns k. From this store on, a kill lands inside the
// operation.
func (h *evHammer) on(kind, k int) int {
	atomic.StoreUint64(h.word(evAckOp), uint64(kind)<<32|uint64(k))
	return k
}

// The kinds of key, as the ack file records them (evAckOp). None is 0, so
// that the op word of an operation running is never 0.
const (
	evKindCounter = 1 + iota
	evKindState
	evKindHot
	evKindCold
)

// evKeyOf returns the key that an ack file's evAckOp word names, or "".
func evKeyOf(w uint64) string {
	k := int(uint32(w))
	switch kind := w >> 32; {
	case kind == evKindCounter && k < evCounters:
		return evCounterKey(k)
	case kind == evKindState && k < evStates:
		return evStateKey(k)
	case kind == evKindHot && k < evHot:
		return evHotKey(k)
	case kind == evKindCold && k < evCold:
		return evColdKey(k)
	}
	return ""
}

// get reads a value key, k its number among the cold keys (-1 for a hot
// key, never an Int), and checks what it finds.
func (h *evHammer) get(key string, k int) error {
	v, _, err := h.d.GetInto(key, h.got)
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("Get(%q) = %w", key, err)
	case v.Kind() == dict.KindInt:
		if k < 0 {
			return fmt.Errorf("Get(%q) = Int %d, want bytes", key, v.Int())
		}
		if v.Int() != int64(k) {
			return fmt.Errorf("Get(%q) = Int %d, want %d", key, v.Int(), k)
		}
		return nil
	case v.Kind() == dict.KindBytes:
		h.got = v.Bytes()
		_, _, err := checkEvValue(key, h.got)
		return err
	}
	return fmt.Errorf("Get(%q) = %v of kind %v", key, v, v.Kind())
}

// write stores a value under key (a hot key when k < 0, else cold key k
// with x picking the operation): bytes of any size, a third with a TTL, or
// for a cold key sometimes Int(k), which is rewritten in place.
func (h *evHammer) write(key string, k, x int) error {
	d, r := h.d, h.r
	ttl := 0
	var v dict.Value
	switch {
	case k < 0:
		if r.IntN(3) == 0 {
			ttl = 1 + r.IntN(evHotTTL)
		}
		h.buf = evValue(h.buf[:0], key, 1+r.IntN(400), h.w, ttl)
		v = dict.Bytes(h.buf)
	case r.IntN(8) == 0:
		v = dict.Int(int64(k))
	default:
		if r.IntN(3) == 0 {
			ttl = 1 + r.IntN(evMaxTTL)
		}
		h.buf = evValue(h.buf[:0], key, evValueSize(r), h.w, ttl)
		v = dict.Bytes(h.buf)
	}
	dur := time.Duration(ttl) * time.Millisecond
	var forcible bool
	var err error
	switch {
	case k < 0 || x < 80:
		forcible, err = d.Set(key, v, dur, 0)
	case x < 83:
		forcible, err = d.Add(key, v, dur, 0)
		if errors.Is(err, dict.ErrExists) {
			err = nil
		}
	case x < 85:
		forcible, err = d.Replace(key, v, dur, 0)
		if errors.Is(err, dict.ErrNotFound) {
			err = nil
		}
	case x < 87:
		err = d.SafeSet(key, v, dur, 0)
		if errors.Is(err, dict.ErrNoMemory) {
			return err // no eviction: not counted in evAckNoRoom
		}
	default:
		err = d.Delete(key)
	}
	h.evicting(forcible)
	if err != nil && !errors.Is(err, dict.ErrNoMemory) && !errors.Is(err, dict.ErrLockTimeout) {
		return fmt.Errorf("write %q (%d): %w", key, x, err)
	}
	return h.noRoom(err)
}

// evicting counts in the ack file a write that evicted live entries, as
// its forcible result says.
func (h *evHammer) evicting(forcible bool) {
	if forcible {
		atomic.AddUint64(h.word(evAckEvicting), 1)
	}
}

// noRoom counts err in the ack file when it is ErrNoMemory from a write
// that evicts, and returns it.
func (h *evHammer) noRoom(err error) error {
	if errors.Is(err, dict.ErrNoMemory) {
		atomic.AddUint64(h.word(evAckNoRoom), 1)
	}
	return err
}

// incr increments counter k by one with IncrInit and acknowledges it in the
// ack file.
func (h *evHammer) incr(k int) error {
	key := evCounterKey(k)
	inflight := h.word(evAckInflight)
	atomic.StoreUint64(inflight, uint64(k)+1)
	n, forcible, err := h.d.IncrInit(key, 1, 0, 0)
	h.evicting(forcible)
	if err != nil {
		atomic.StoreUint64(inflight, 0) // it changed nothing
		if errors.Is(err, dict.ErrNoMemory) || errors.Is(err, dict.ErrLockTimeout) {
			return h.noRoom(err)
		}
		return fmt.Errorf("IncrInit(%q, 1) = %w", key, err)
	}
	atomic.AddUint64(h.word(evAckCounts+8*k), 1)
	atomic.StoreUint64(inflight, 0)
	if n < 1 {
		return fmt.Errorf("IncrInit(%q, 1) = %d, want at least 1", key, n)
	}
	return nil
}

// mutate adds one to every word of a state key with Mutate (creating it
// when absent), or reads it; either way the state it meets must be whole.
func (h *evHammer) mutate(key string, write bool) error {
	return mutateState(h.d, key, write, h.noRoom)
}
