//go:build dicthooks

package dict

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The model test: random operations on a Dict and on a reference model (a
// map, a CLOCK queue per shard, TTLs on a fake clock), compared after every
// operation. The seed comes from testutil.Seed: a failing run prints the
// command that replays it. It reads what the dict's eviction records
// (hooks.go), so it builds only with the dicthooks tag.
//
// The model follows the eviction of DESIGN.md, section 5, exactly: entries
// sit in a queue per shard, new keys at the head and unreferenced; reads and writes of a live
// key set a reference bit; a failed allocation reclaims from the tail in rounds
// of up to roundFrees entries (expired ones, and with eviction the first unreferenced
// live one, giving referenced ones a second chance at the head), never the
// key's own entry, up to maxRounds rounds. A new key that finds its trace joins the
// protected segment at its tail: the model takes which keys did from the
// dict (shard.recalls), and checks that each was evicted while live. Which allocation fails depends on the
// slab, so:
//   - exact: every entry and list node takes the same slab chunk (96-byte
//     keys, values of 1..16 bytes, list elements of 113..128 bytes), the
//     model counts chunks, and it predicts every eviction and ErrNoMemory;
//   - mixed: sizes vary, and the model takes from the shard's counters how
//     many entries the dict reclaimed, then checks which ones, that they
//     form whole rounds, the forcible flag, and that an ErrNoMemory came
//     only when no round could free more or the 30 rounds were spent;
//   - spread: 16 shards in a zone large enough that nothing is reclaimed.
//
// This file holds the configurations and the driver; the reference model is
// in model_reference_test.go, the operations in model_ops_test.go and
// model_zoneops_test.go, and the whole-zone check in model_check_test.go.

const mdlOps = 100_000

// mdlCheckEvery is how often the whole zone is compared and checked.
const mdlCheckEvery = 1000

// mdlChunk is the one chunk size of the exact run: entrySize(96, 1..16) and
// nodeHdrSize+113..128 all round up to the 144-byte class.
const mdlChunk = 144

type mdlConfig struct {
	name   string
	size   int64
	shards int
	mode   int // mdlExact, mdlMixed or mdlSpread
	keys   int
	hot    int // keys picked more often, so that they get read between passes
	key    func(i int) string
	value  func(r *rand.Rand) Value // a value to store
	elem   func(r *rand.Rand) Value // a list element
}

const (
	mdlExact = iota
	mdlMixed
	mdlSpread
)

func TestModel(t *testing.T) {
	for _, cfg := range []mdlConfig{
		{
			name: "shards=1/evict=exact", size: specMinZone, shards: 1, mode: mdlExact,
			keys: 1500, hot: 40,
			key:   func(i int) string { return fmt.Sprintf("k%04d", i) + strings.Repeat(".", 91) },
			value: func(r *rand.Rand) Value { return mdlValue(r, 1, 16, 0) },
			elem:  func(r *rand.Rand) Value { return String(mdlString(r, 113+r.IntN(16))) },
		},
		{
			name: "shards=1/evict=mixed", size: specMinZone, shards: 1, mode: mdlMixed,
			keys: 300, hot: 30,
			key:   func(i int) string { return strconv.Itoa(i) + ":" + strings.Repeat("x", i%40) },
			value: func(r *rand.Rand) Value { return mdlValue(r, 0, 300, 9000) },
			elem:  func(r *rand.Rand) Value { return mdlValue(r, 0, 200, 0) },
		},
		{
			name: "shards=16/no-evict", size: 16 << 20, shards: 16, mode: mdlSpread,
			keys: 2000, hot: 100,
			key:   func(i int) string { return "key:" + strconv.Itoa(i) },
			value: func(r *rand.Rand) Value { return mdlValue(r, 0, 300, 0) },
			elem:  func(r *rand.Rand) Value { return mdlValue(r, 0, 100, 0) },
		},
	} {
		t.Run(cfg.name, func(t *testing.T) { mdlRunTest(t, cfg, testutil.Seed(t)) })
	}
}

// mdlValue returns an int, float, bool or bytes of minLen..maxLen bytes, and
// now and then, when big > 0, bytes of up to big bytes.
func mdlValue(r *rand.Rand, minLen, maxLen, big int) Value {
	switch r.IntN(4) {
	case 0:
		return Int(mdlInt(r))
	case 1:
		return Float(float64(r.IntN(4000)-2000) / 8)
	case 2:
		return Bool(r.IntN(2) == 0)
	}
	if big > 0 && r.IntN(40) == 0 {
		return String(mdlString(r, 2000+r.IntN(big-2000)))
	}
	return String(mdlString(r, minLen+r.IntN(maxLen-minLen+1)))
}

func mdlInt(r *rand.Rand) int64 {
	switch r.IntN(10) {
	case 0:
		return math.MaxInt64 - r.Int64N(4)
	case 1:
		return int64(r.Uint64())
	}
	return r.Int64N(2000) - 1000
}

func mdlString(r *rand.Rand, n int) string {
	const alphabet = "ab\x00\xffz"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// mdlRun drives one configuration.
type mdlRun struct {
	t     *testing.T
	cfg   mdlConfig
	seed  uint64
	r     *rand.Rand
	clock *testutil.Clock
	d, ro *Dict
	m     *mdlModel
	keys  []string
	op    int
	cap   int // chunks per shard (exact run)

	// What the dict reclaimed during the current keyed operation (mixed
	// and spread runs), from the shard's counters.
	budget   int
	noMemory bool // the operation returned ErrNoMemory
	st0      Stats
	// clears records the pages the dict cleared during the current
	// operation (clearPageInShard), which the model's alloc replays.
	clears *[]clearStep
	// recalls records the keys whose new entry found its trace during the
	// current operation (shard.recalls), which the model's insert takes.
	recalls *[]recall

	outcomes map[string]int // "op result" → count, logged at the end
}

// note counts an operation's outcome.
func (h *mdlRun) note(op string, err error, extra ...string) {
	o := op + " ok"
	if err != nil {
		o = op + " " + strings.TrimPrefix(err.Error(), "dict: ")
	}
	for _, x := range extra {
		o += " " + x
	}
	h.outcomes[o]++
}

func mdlRunTest(t *testing.T, cfg mdlConfig, seed uint64) {
	start := time.Now()
	h := &mdlRun{t: t, cfg: cfg, seed: seed, r: rand.New(rand.NewPCG(seed, uint64(cfg.mode))), clock: new(testutil.Clock), outcomes: map[string]int{}}
	path := filepath.Join(t.TempDir(), "zone")
	var err error
	h.d = openSeeded(t, path, Options{Size: cfg.size, Shards: cfg.shards, Clock: h.clock.UnixMilli}, h.r.Uint64())
	defer h.d.Close()
	h.ro, err = Open(path, Options{ReadOnly: true, Clock: h.clock.UnixMilli})
	if err != nil {
		t.Fatalf("Open(ReadOnly) = %v", err)
	}
	defer h.ro.Close()
	n := len(h.d.shards)
	h.m = &mdlModel{
		now:         h.clock.UnixMilli,
		entries:     map[string]*mdlEntry{},
		queues:      make([]*list.List, n),
		protTail:    make([]*mdlEntry, n),
		protCount:   make([]int, n),
		used:        make([]int, n),
		evictions:   make([]uint64, n),
		expirations: make([]uint64, n),
		seed:        h.d.seed,
		mask:        h.d.mask,
		pageSize:    h.d.shards[0].slab.PageSize(),
	}
	for i := range h.m.queues {
		h.m.queues[i] = list.New()
	}
	h.clears = new([]clearStep)
	recalls := new([]recall)
	h.recalls = recalls
	for i := range h.d.shards {
		h.d.shards[i].clears = h.clears
		h.d.shards[i].recalls = recalls
	}
	h.m.evicted = map[string]bool{}
	h.m.recalled = func(key string) (int, bool) {
		for i, r := range *recalls {
			if r.key == key {
				*recalls = append((*recalls)[:i], (*recalls)[i+1:]...)
				h.outcomes["recalled"]++
				return int(r.count), true
			}
		}
		return 0, false
	}
	h.cap = h.d.shards[0].slab.Pages() * (h.m.pageSize / mdlChunk)
	h.keys = make([]string, cfg.keys)
	for i := range h.keys {
		h.keys[i] = cfg.key(i)
	}
	for h.op = 1; h.op <= mdlOps; h.op++ {
		h.step()
		if h.op%mdlCheckEvery == 0 {
			h.verifyAll()
		}
	}
	h.verifyAll()
	// A new key may meet another's fingerprint: about one in 2^22.
	if h.m.implausible > 1 {
		t.Errorf("%d keys never evicted were found among the traces", h.m.implausible)
	}
	st := h.d.Stats()
	t.Logf("%d ops in %v: %d entries, %d evictions, %d expirations, %d writes", mdlOps, time.Since(start).Round(time.Millisecond), st.Entries, st.Evictions, st.Expirations, st.Writes)
	var outs []string
	for o, n := range h.outcomes {
		outs = append(outs, fmt.Sprintf("%s: %d", o, n))
	}
	sort.Strings(outs)
	t.Logf("outcomes:\n\t%s", strings.Join(outs, "\n\t"))
	for _, o := range []string{"Set ok forcible", "SafeSet no memory", "CompareAndSwap ok swapped", "CompareAndSwap ok", "Update ok", "LPop ok", "RPush ok", "IncrInit ok", "GetStale ok stale", "Incr not a number"} {
		if cfg.mode == mdlSpread && (o == "Set ok forcible" || o == "SafeSet no memory") {
			continue
		}
		if h.outcomes[o] == 0 {
			t.Errorf("no %q in %d ops", o, mdlOps)
		}
	}
	if cfg.mode == mdlMixed && h.outcomes["page cleared"] == 0 {
		t.Errorf("no page cleared for an entry of another size in %d ops", mdlOps)
	}
	switch {
	case cfg.mode == mdlSpread && st.Evictions != 0:
		t.Fatalf("%d evictions in the spread run, want 0", st.Evictions)
	case cfg.mode != mdlSpread && st.Evictions < 100:
		t.Fatalf("only %d evictions: the zone is too large for the run", st.Evictions)
	}
}

func (h *mdlRun) failf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("op %d (seed %d): %s", h.op, h.seed, fmt.Sprintf(format, args...))
}

func (h *mdlRun) pickKey() string {
	if h.r.IntN(3) == 0 {
		return h.keys[h.r.IntN(h.cfg.hot)]
	}
	return h.keys[h.r.IntN(len(h.keys))]
}

func (h *mdlRun) ttl() time.Duration {
	switch r := h.r.IntN(10); {
	case r < 5:
		return 0
	case r == 5:
		return time.Duration(1 + h.r.IntN(int(time.Millisecond)-1)) // sub-ms: 1 ms
	}
	return time.Duration(1+h.r.IntN(2000)) * time.Millisecond
}

func (h *mdlRun) flags() uint32 { return uint32(h.r.IntN(4)) * 0x1000_0001 }

// begin notes the counters of key's shard before a keyed operation.
func (h *mdlRun) begin(key string) int {
	sh := h.m.shardOf(key)
	h.st0 = h.d.ShardStats(sh)
	*h.clears = (*h.clears)[:0]
	return sh
}

// observe turns the counters' change into the budget of entries the model
// must reclaim, less own: entries the operation removes itself.
func (h *mdlRun) observe(sh int, err error, own int) {
	st := h.d.ShardStats(sh)
	h.budget = int(st.Evictions-h.st0.Evictions) + int(st.Expirations-h.st0.Expirations) - own
	if h.cfg.mode == mdlExact {
		h.budget = 0 // the model predicts; end compares the counters
	}
	h.noMemory = errors.Is(err, ErrNoMemory)
	if h.cfg.mode == mdlSpread && (h.budget != 0 || h.noMemory) {
		h.failf("shard %d reclaimed %d entries (error %v) in a zone that should not fill", sh, h.budget, err)
	}
}

// end checks that the model reclaimed what the dict did and that the
// shard's counters agree.
func (h *mdlRun) end(sh int) {
	h.t.Helper()
	if h.budget != 0 {
		h.failf("the dict reclaimed %d entries more than the model", h.budget)
	}
	st := h.d.ShardStats(sh)
	if st.Evictions != h.m.evictions[sh] || st.Expirations != h.m.expirations[sh] {
		h.failf("shard %d: %d evictions, %d expirations; model %d, %d", sh, st.Evictions, st.Expirations, h.m.evictions[sh], h.m.expirations[sh])
	}
	if st.Entries != int64(h.m.queues[sh].Len()) {
		h.failf("shard %d: %d entries, model %d", sh, st.Entries, h.m.queues[sh].Len())
	}
}

// step runs one random operation.
func (h *mdlRun) step() {
	// A key the dict created and removed in one operation (Mutate's fn
	// keeps nothing) used its trace up, though the model made no entry.
	for _, r := range *h.recalls {
		delete(h.m.evicted, r.key)
		h.outcomes["recalled, not kept"]++
	}
	*h.recalls = (*h.recalls)[:0]
	if h.r.IntN(10) < 3 {
		if h.r.IntN(200) == 0 {
			h.clock.Advance(time.Duration(1+h.r.IntN(5000)) * time.Millisecond)
		} else {
			h.clock.Advance(time.Duration(1+h.r.IntN(20)) * time.Millisecond)
		}
	}
	key := h.pickKey()
	switch x := h.r.IntN(1000); {
	case x < 120:
		h.set(key, "Set")
	case x < 170:
		h.set(key, "SafeSet")
	case x < 220:
		h.set(key, "Add")
	case x < 250:
		h.set(key, "SafeAdd")
	case x < 290:
		h.set(key, "Replace")
	case x < 330:
		h.delete(key)
	case x < 450:
		h.get(key, h.r.IntN(3))
	case x < 480:
		h.ttlOp(key)
	case x < 510:
		h.expire(key)
	case x < 570:
		h.incr(key)
	case x < 610:
		h.incrInit(key)
	case x < 640:
		h.incrFloat(key)
	case x < 690:
		h.cas(key)
	case x < 740:
		h.update(key)
	case x < 830:
		h.push(key, h.r.IntN(2) == 0)
	case x < 910:
		h.pop(key, h.r.IntN(2) == 0)
	case x < 950:
		h.llen(key)
	case x < 970:
		h.keysOp()
	case x < 995:
		h.flushExpired()
	case x < 996 && h.r.IntN(20) == 0:
		h.flushAll()
	default:
		h.get(key, 0)
	}
}
