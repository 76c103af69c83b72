package dict

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/slab"
)

// The model test: random operations on a Dict and on a reference model (a
// map, a CLOCK queue per shard, TTLs on a fake clock), compared after every
// operation. The seed is logged; DICT_MODEL_SEED=n replays a run.
//
// The model follows doc.go's eviction exactly: entries sit in a queue per
// shard, new keys at the head and unreferenced; reads and writes of a live
// key set a reference bit; a failed allocation reclaims from the tail in rounds
// of up to 3 entries (expired ones, and with eviction the first unreferenced
// live one, giving referenced ones a second chance at the head), never the
// key's own entry, up to 30 rounds. Which allocation fails depends on the
// slab, so:
//   - exact: every entry and list node takes the same slab chunk (96-byte
//     keys, values of 1..16 bytes, list elements of 113..128 bytes), the
//     model counts chunks, and it predicts every eviction and ErrNoMemory;
//   - mixed: sizes vary, and the model takes from the shard's counters how
//     many entries the dict reclaimed, then checks which ones, that they
//     form whole rounds, the forcible flag, and that an ErrNoMemory came
//     only when no round could free more or the 30 rounds were spent;
//   - spread: 16 shards in a zone large enough that nothing is reclaimed.

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
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DICT_MODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DICT_MODEL_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with DICT_MODEL_SEED=%d)", seed, seed)
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
		t.Run(cfg.name, func(t *testing.T) { mdlRunTest(t, cfg, seed) })
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

// mdlEntry is the model of one entry.
type mdlEntry struct {
	key    string
	val    Value   // a value's
	elems  []Value // a list's
	isList bool
	flags  uint32
	expiry int64 // Unix ms, 0 = never
	ref    bool  // the CLOCK bit
	el     *list.Element
	sh     int
}

func (e *mdlEntry) vlen() int {
	if e.isList {
		return listHdrSize
	}
	return e.val.Len()
}

// mdlModel is the reference: entries by key, and per shard a queue (Front
// the head, Back the tail), the chunks in use (exact run) and the counters.
type mdlModel struct {
	now         func() int64
	entries     map[string]*mdlEntry
	queues      []*list.List
	used        []int
	evictions   []uint64
	expirations []uint64
	seed, mask  uint64
	pageSize    int
}

func (m *mdlModel) shardOf(key string) int { return int(hashKey(m.seed, key) & m.mask) }

func (m *mdlModel) expired(e *mdlEntry) bool { return e.expiry != 0 && m.now() >= e.expiry }

// live returns key's entry when it is live.
func (m *mdlModel) live(key string) *mdlEntry {
	if e := m.entries[key]; e != nil && !m.expired(e) {
		return e
	}
	return nil
}

func (m *mdlModel) entryChunk(klen, vlen int) int {
	return slab.ChunkSize(entrySize(klen, vlen), m.pageSize)
}

func (m *mdlModel) nodeChunk(v Value) int { return slab.ChunkSize(nodeHdrSize+v.Len(), m.pageSize) }

// insert adds a new entry at the head of its queue, unreferenced.
func (m *mdlModel) insert(key string, val Value, isList bool, flags uint32, expiry int64) *mdlEntry {
	sh := m.shardOf(key)
	e := &mdlEntry{key: key, val: val, isList: isList, flags: flags, expiry: expiry, sh: sh}
	e.el = m.queues[sh].PushFront(e)
	m.entries[key] = e
	return e
}

// drop removes an entry and frees its chunks.
func (m *mdlModel) drop(e *mdlEntry) {
	m.queues[e.sh].Remove(e.el)
	delete(m.entries, e.key)
	m.used[e.sh] -= 1 + len(e.elems)
}

func (m *mdlModel) expiryFor(ttl time.Duration) int64 {
	if ttl == 0 {
		return 0
	}
	return m.now() + int64((ttl+time.Millisecond-1)/time.Millisecond)
}

// round is one reclaimLocked: up to 3 entries from the tail of shard sh.
func (m *mdlModel) round(sh int, evict bool, pin *mdlEntry) (freed int, live bool) {
	q := m.queues[sh]
	for el := q.Back(); el != nil && freed < 3; {
		e := el.Value.(*mdlEntry)
		prev := el.Prev()
		if e == pin {
			el = prev
			continue
		}
		exp := m.expired(e)
		if !exp {
			if !evict || live {
				break
			}
			if e.ref {
				e.ref = false
				q.MoveToFront(el)
				el = prev
				if el == nil {
					el = q.Back()
				}
				continue
			}
		}
		m.drop(e)
		if exp {
			m.expirations[sh]++
		} else {
			m.evictions[sh]++
			live = true
		}
		freed++
		el = prev
	}
	return freed, live
}

// nextExpired returns the entry a reclaim without eviction frees next: the
// first from the tail, the pinned one aside, when it has expired.
func (m *mdlModel) nextExpired(sh int, pin *mdlEntry) *mdlEntry {
	for el := m.queues[sh].Back(); el != nil; el = el.Prev() {
		e := el.Value.(*mdlEntry)
		if e == pin {
			continue
		}
		if m.expired(e) {
			return e
		}
		return nil
	}
	return nil
}

// mdlRun drives one configuration.
type mdlRun struct {
	t     *testing.T
	cfg   mdlConfig
	seed  uint64
	r     *rand.Rand
	clock *specClock
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
	h := &mdlRun{t: t, cfg: cfg, seed: seed, r: rand.New(rand.NewPCG(seed, uint64(cfg.mode))), clock: newSpecClock(), outcomes: map[string]int{}}
	path := filepath.Join(t.TempDir(), "zone")
	var err error
	h.d, err = Open(path, Options{Size: cfg.size, Shards: cfg.shards, Clock: h.clock.Now})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer h.d.Close()
	h.ro, err = Open(path, Options{ReadOnly: true, Clock: h.clock.Now})
	if err != nil {
		t.Fatalf("Open(ReadOnly) = %v", err)
	}
	defer h.ro.Close()
	n := len(h.d.shards)
	h.m = &mdlModel{
		now:         h.clock.Now,
		entries:     map[string]*mdlEntry{},
		queues:      make([]*list.List, n),
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
	switch {
	case cfg.mode == mdlSpread && st.Evictions != 0:
		t.Fatalf("%d evictions in the spread run, want 0", st.Evictions)
	case cfg.mode != mdlSpread && st.Evictions < 100:
		t.Fatalf("only %d evictions: the zone is too large for the run", st.Evictions)
	}
}

func (h *mdlRun) failf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("op %d (DICT_MODEL_SEED=%d): %s", h.op, h.seed, fmt.Sprintf(format, args...))
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

// alloc mirrors allocLocked for one chunk of size bytes in shard sh.
func (h *mdlRun) alloc(sh, size int, evict bool, pin *mdlEntry) (forcible bool, err error) {
	h.t.Helper()
	m := h.m
	if h.cfg.mode == mdlExact {
		if size != mdlChunk {
			h.failf("the exact run allocates %d bytes, not %d", size, mdlChunk)
		}
		for rounds := 0; ; rounds++ {
			if m.used[sh] < h.cap {
				m.used[sh]++
				return forcible, nil
			}
			if rounds == 30 {
				return forcible, ErrNoMemory
			}
			freed, live := m.round(sh, evict, pin)
			forcible = forcible || live
			if freed == 0 {
				return forcible, ErrNoMemory
			}
		}
	}
	if !evict {
		// Without eviction a reclaim frees expired entries from the tail,
		// and the round boundaries change nothing.
		for ; h.budget > 0; h.budget-- {
			e := m.nextExpired(sh, pin)
			if e == nil {
				h.failf("the dict reclaimed %d more entries than have expired at the tail", h.budget)
			}
			m.drop(e)
			m.expirations[sh]++
		}
		if h.noMemory {
			// The last round freed nothing (or 30 rounds of 3 were spent).
			if e := m.nextExpired(sh, pin); e != nil && h.budget < 90 {
				h.failf("ErrNoMemory though %q has expired at the tail", short(e.key))
			}
			return false, ErrNoMemory
		}
		return false, nil
	}
	rounds := 0
	for h.budget > 0 {
		if rounds == 30 {
			h.failf("the dict reclaimed %d entries after 30 rounds", h.budget)
		}
		freed, live := m.round(sh, evict, pin)
		if freed == 0 || freed > h.budget {
			h.failf("round %d frees %d entries in the model, the dict %d in all", rounds, freed, h.budget)
		}
		h.budget -= freed
		forcible = forcible || live
		rounds++
	}
	if h.noMemory {
		if rounds < 30 {
			if freed, _ := m.round(sh, evict, pin); freed != 0 {
				h.failf("ErrNoMemory after %d rounds, but round %d frees %d entries in the model", rounds, rounds+1, freed)
			}
		}
		return forcible, ErrNoMemory
	}
	return forcible, nil
}

// store mirrors storeLocked.
func (h *mdlRun) store(key string, v Value, expiry int64, flags uint32, m mode, evict, keepFlags bool) (bool, error) {
	h.t.Helper()
	md := h.m
	e := md.entries[key]
	live := e != nil && !md.expired(e)
	if keepFlags && live {
		flags = e.flags
	}
	switch {
	case m == modeAdd && live:
		return false, ErrExists
	case m == modeReplace && !live:
		return false, ErrNotFound
	}
	if keepFlags && !live {
		flags = 0
	}
	need := md.entryChunk(len(key), storedLen(v))
	if e != nil && need == md.entryChunk(len(key), e.vlen()) {
		md.used[e.sh] -= len(e.elems)
		e.elems, e.isList = nil, false
		e.val, e.flags, e.expiry, e.ref = v, flags, expiry, true
		return false, nil
	}
	if e != nil && !live && !evict {
		md.drop(e)
		e = nil
	}
	sh := md.shardOf(key)
	forcible, err := h.alloc(sh, need, evict, e)
	if err != nil {
		return forcible, err
	}
	if e != nil {
		md.drop(e) // the old chunk goes; alloc counted the new one
	}
	ne := md.insert(key, v, false, flags, expiry)
	ne.ref = live // a rewritten live key was just used; a new one starts unreferenced
	return forcible, nil
}

// step runs one random operation.
func (h *mdlRun) step() {
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

func (h *mdlRun) set(key, name string) {
	v, ttl, flags := h.cfg.value(h.r), h.ttl(), h.flags()
	sh := h.begin(key)
	var forcible bool
	var err error
	m, evict := modeSet, true
	switch name {
	case "Set":
		forcible, err = h.d.Set(key, v, ttl, flags)
	case "SafeSet":
		err, evict = h.d.SafeSet(key, v, ttl, flags), false
	case "Add":
		forcible, err = h.d.Add(key, v, ttl, flags)
		m = modeAdd
	case "SafeAdd":
		err, evict, m = h.d.SafeAdd(key, v, ttl, flags), false, modeAdd
	case "Replace":
		forcible, err = h.d.Replace(key, v, ttl, flags)
		m = modeReplace
	}
	h.observe(sh, err, 0)
	wantF, wantErr := h.store(key, v, h.m.expiryFor(ttl), flags, m, evict, false)
	if forcible != wantF || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q, %s %q, %v, %d) = %v, %v; want %v, %v", name, short(key), v.Kind(), short(v.String()), ttl, flags, forcible, err, wantF, wantErr)
	}
	if forcible {
		h.note(name, err, "forcible")
	} else {
		h.note(name, err)
	}
	h.end(sh)
}

func (h *mdlRun) delete(key string) {
	sh := h.begin(key)
	err := h.d.Delete(key)
	h.observe(sh, err, 0)
	if err != nil {
		h.failf("Delete(%q) = %v", short(key), err)
	}
	h.note("Delete", err)
	if e := h.m.entries[key]; e != nil {
		h.m.drop(e)
	}
	h.end(sh)
}

// get runs Get (how 0), GetInto (1) or GetStale (2).
func (h *mdlRun) get(key string, how int) {
	sh := h.begin(key)
	var v Value
	var flags uint32
	var stale bool
	var err error
	name := [...]string{"Get", "GetInto", "GetStale"}[how]
	switch how {
	case 0:
		v, flags, err = h.d.Get(key)
	case 1:
		v, flags, err = h.d.GetInto(key, make([]byte, h.r.IntN(64), h.r.IntN(64)+64))
	case 2:
		v, flags, stale, err = h.d.GetStale(key)
	}
	h.observe(sh, err, 0)
	e := h.m.entries[key]
	var want Value
	var wantFlags uint32
	var wantStale bool
	var wantErr error
	switch {
	case e == nil || (h.m.expired(e) && how != 2):
		wantErr = ErrNotFound
	case e.isList:
		wantErr = ErrIsList
	default:
		want, wantFlags, wantStale = e.val, e.flags, h.m.expired(e)
		e.ref = true
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) || !v.Equal(want) || flags != wantFlags || stale != wantStale {
		h.failf("%s(%q) = %s %q, %d, stale %v, %v; want %s %q, %d, stale %v, %v", name, short(key), v.Kind(), short(v.String()), flags, stale, err, want.Kind(), short(want.String()), wantFlags, wantStale, wantErr)
	}
	if stale {
		h.note(name, err, "stale")
	} else {
		h.note(name, err)
	}
	h.end(sh)
}

func (h *mdlRun) ttlOp(key string) {
	sh := h.begin(key)
	ttl, err := h.d.TTL(key)
	h.observe(sh, err, 0)
	var want time.Duration
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case e.expiry != 0:
		want = time.Duration(e.expiry-h.m.now()) * time.Millisecond
	}
	if ttl != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("TTL(%q) = %v, %v; want %v, %v", short(key), ttl, err, want, wantErr)
	}
	h.note("TTL", err)
	h.end(sh)
}

func (h *mdlRun) expire(key string) {
	ttl := h.ttl()
	sh := h.begin(key)
	err := h.d.Expire(key, ttl)
	h.observe(sh, err, 0)
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else {
		e.expiry = h.m.expiryFor(ttl)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Expire(%q, %v) = %v; want %v", short(key), ttl, err, wantErr)
	}
	h.note("Expire", err)
	h.end(sh)
}

// incrModel mirrors incrLocked on a live number: the sum as an int and as
// a float; ok is false for a non-number.
func (h *mdlRun) incrModel(e *mdlEntry, delta int64, fdelta float64, asFloat bool) (int64, float64, bool) {
	if e.isList || (e.val.Kind() != KindInt && e.val.Kind() != KindFloat) {
		return 0, 0, false
	}
	var n int64
	var f float64
	switch {
	case e.val.Kind() == KindInt && !asFloat:
		n = e.val.Int() + delta
		f = float64(n)
		e.val = Int(n)
	case e.val.Kind() == KindInt:
		f = float64(e.val.Int()) + fdelta
		n = int64(f)
		e.val = Float(f)
	default:
		f = e.val.Float() + fdelta
		n = int64(f)
		e.val = Float(f)
	}
	e.ref = true
	return n, f, true
}

func (h *mdlRun) incr(key string) {
	delta := mdlInt(h.r)
	sh := h.begin(key)
	n, err := h.d.Incr(key, delta)
	h.observe(sh, err, 0)
	var want int64
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else if w, _, ok := h.incrModel(e, delta, float64(delta), false); !ok {
		wantErr = ErrNotNumber
	} else {
		want = w
	}
	if (err == nil && n != want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Incr(%q, %d) = %d, %v; want %d, %v", short(key), delta, n, err, want, wantErr)
	}
	h.note("Incr", err)
	h.end(sh)
}

func (h *mdlRun) incrFloat(key string) {
	delta := float64(h.r.IntN(800)-400) / 16
	sh := h.begin(key)
	f, err := h.d.IncrFloat(key, delta)
	h.observe(sh, err, 0)
	var want float64
	var wantErr error
	if e := h.m.live(key); e == nil {
		wantErr = ErrNotFound
	} else if _, w, ok := h.incrModel(e, 0, delta, true); !ok {
		wantErr = ErrNotNumber
	} else {
		want = w
	}
	if (err == nil && f != want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("IncrFloat(%q, %v) = %v, %v; want %v, %v", short(key), delta, f, err, want, wantErr)
	}
	h.note("IncrFloat", err)
	h.end(sh)
}

func (h *mdlRun) incrInit(key string) {
	delta, init, ttl := mdlInt(h.r), mdlInt(h.r), h.ttl()
	sh := h.begin(key)
	n, forcible, err := h.d.IncrInit(key, delta, init, ttl)
	h.observe(sh, err, 0)
	var want int64
	var wantF bool
	var wantErr error
	if e := h.m.live(key); e != nil {
		if w, _, ok := h.incrModel(e, delta, float64(delta), false); ok {
			want = w
		} else {
			wantErr = ErrNotNumber
		}
	} else {
		want = init + delta
		wantF, wantErr = h.store(key, Int(want), h.m.expiryFor(ttl), 0, modeSet, true, false)
	}
	if (err == nil && n != want) || forcible != wantF || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("IncrInit(%q, %d, %d, %v) = %d, %v, %v; want %d, %v, %v", short(key), delta, init, ttl, n, forcible, err, want, wantF, wantErr)
	}
	h.note("IncrInit", err)
	h.end(sh)
}

func (h *mdlRun) cas(key string) {
	old := h.cfg.value(h.r)
	if e := h.m.live(key); e != nil && !e.isList && h.r.IntN(2) == 0 {
		old = e.val
	}
	v, ttl := h.cfg.value(h.r), h.ttl()
	sh := h.begin(key)
	ok, err := h.d.CompareAndSwap(key, old, v, ttl)
	h.observe(sh, err, 0)
	var wantOK bool
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case e.isList:
		wantErr = ErrIsList
	case !e.val.Equal(old):
	default:
		_, wantErr = h.store(key, v, h.m.expiryFor(ttl), 0, modeSet, true, true)
		wantOK = wantErr == nil
	}
	if ok != wantOK || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("CompareAndSwap(%q, %s %q, %s %q, %v) = %v, %v; want %v, %v", short(key), old.Kind(), short(old.String()), v.Kind(), short(v.String()), ttl, ok, err, wantOK, wantErr)
	}
	if ok {
		h.note("CompareAndSwap", err, "swapped")
	} else {
		h.note("CompareAndSwap", err)
	}
	h.end(sh)
}

func (h *mdlRun) update(key string) {
	keep := h.r.IntN(5) != 0
	next, ttl := h.cfg.value(h.r), h.ttl()
	e := h.m.live(key)
	var wantCur Value
	wantOK, wantCall := e != nil, e == nil || !e.isList
	if e != nil && !e.isList {
		wantCur = e.val
	}
	called := false
	var mismatch string
	sh := h.begin(key)
	err := h.d.Update(key, func(cur Value, ok bool) (Value, time.Duration, bool) {
		called = true
		if ok != wantOK || !cur.Equal(wantCur) {
			mismatch = fmt.Sprintf("fn got %s %q, %v; want %s %q, %v", cur.Kind(), short(cur.String()), ok, wantCur.Kind(), short(wantCur.String()), wantOK)
		}
		return next, ttl, keep
	})
	h.observe(sh, err, 0)
	if mismatch != "" {
		h.failf("Update(%q): %s", short(key), mismatch)
	}
	if called != wantCall {
		h.failf("Update(%q) called fn: %v, want %v", short(key), called, wantCall)
	}
	var wantErr error
	switch {
	case !wantCall:
		wantErr = ErrIsList
	case !keep:
		if e := h.m.entries[key]; e != nil {
			h.m.drop(e)
		}
	default:
		_, wantErr = h.store(key, next, h.m.expiryFor(ttl), 0, modeSet, true, true)
	}
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("Update(%q) to %s %q, %v, keep %v = %v; want %v", short(key), next.Kind(), short(next.String()), ttl, keep, err, wantErr)
	}
	h.note("Update", err)
	h.end(sh)
}

func (h *mdlRun) push(key string, head bool) {
	v := h.cfg.elem(h.r)
	name := "RPush"
	sh := h.begin(key)
	var n int
	var err error
	if head {
		name = "LPush"
		n, err = h.d.LPush(key, v)
	} else {
		n, err = h.d.RPush(key, v)
	}
	m := h.m
	e := m.entries[key]
	own := 0
	if e != nil && m.expired(e) {
		m.drop(e)
		m.expirations[sh]++
		e, own = nil, 1
	}
	h.observe(sh, err, own)
	var want int
	var wantErr error
	switch {
	case e != nil && !e.isList:
		wantErr = ErrNotList
	case h.cfg.mode == mdlExact:
		created := false
		if e == nil {
			if _, wantErr = h.alloc(sh, m.entryChunk(len(key), listHdrSize), false, nil); wantErr != nil {
				break
			}
			e, created = m.insert(key, Value{}, true, 0, 0), true
		}
		if _, wantErr = h.alloc(sh, m.nodeChunk(v), false, e); wantErr != nil {
			if created {
				m.drop(e)
			}
			break
		}
	default:
		if _, wantErr = h.alloc(sh, 0, false, e); wantErr != nil {
			break
		}
		if e == nil {
			e = m.insert(key, Value{}, true, 0, 0)
		}
	}
	if wantErr == nil && e != nil && e.isList {
		if head {
			e.elems = append([]Value{v}, e.elems...)
		} else {
			e.elems = append(e.elems, v)
		}
		e.ref = true
		want = len(e.elems)
	}
	if n != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q, %s %q) = %d, %v; want %d, %v", name, short(key), v.Kind(), short(v.String()), n, err, want, wantErr)
	}
	h.note(name, err)
	h.end(sh)
}

func (h *mdlRun) pop(key string, head bool) {
	name := "RPop"
	sh := h.begin(key)
	var v Value
	var err error
	if head {
		name = "LPop"
		v, err = h.d.LPop(key)
	} else {
		v, err = h.d.RPop(key)
	}
	h.observe(sh, err, 0)
	var want Value
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
		wantErr = ErrNotFound
	case !e.isList:
		wantErr = ErrNotList
	default:
		if head {
			want, e.elems = e.elems[0], e.elems[1:]
		} else {
			want, e.elems = e.elems[len(e.elems)-1], e.elems[:len(e.elems)-1]
		}
		h.m.used[sh]--
		if len(e.elems) == 0 {
			h.m.drop(e)
		} else {
			e.ref = true
		}
	}
	if !v.Equal(want) || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("%s(%q) = %s %q, %v; want %s %q, %v", name, short(key), v.Kind(), short(v.String()), err, want.Kind(), short(want.String()), wantErr)
	}
	h.note(name, err)
	h.end(sh)
}

func (h *mdlRun) llen(key string) {
	sh := h.begin(key)
	n, err := h.d.LLen(key)
	h.observe(sh, err, 0)
	var want int
	var wantErr error
	switch e := h.m.live(key); {
	case e == nil:
	case !e.isList:
		wantErr = ErrNotList
	default:
		want = len(e.elems)
	}
	if n != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		h.failf("LLen(%q) = %d, %v; want %d, %v", short(key), n, err, want, wantErr)
	}
	h.note("LLen", err)
	h.end(sh)
}

// modelKeys lists the live keys as Keys(max) does: each shard's queue from
// the tail.
func (h *mdlRun) modelKeys(max int) []string {
	var keys []string
	for _, q := range h.m.queues {
		for el := q.Back(); el != nil && (max == 0 || len(keys) < max); el = el.Prev() {
			if e := el.Value.(*mdlEntry); !h.m.expired(e) {
				keys = append(keys, e.key)
			}
		}
	}
	return keys
}

func (h *mdlRun) keysOp() {
	max := [...]int{0, 0, 1, 5, 50}[h.r.IntN(5)]
	keys, err := h.d.Keys(max)
	want := h.modelKeys(max)
	if err != nil || strings.Join(keys, "\n") != strings.Join(want, "\n") {
		h.failf("Keys(%d) = %d keys %q, %v;\nwant %d keys %q", max, len(keys), mdlShortKeys(keys), err, len(want), mdlShortKeys(want))
	}
	h.note("Keys", err)
}

func mdlShortKeys(keys []string) []string {
	out := make([]string, 0, min(len(keys), 20))
	for i, k := range keys {
		if i == 20 {
			out = append(out, "…")
			break
		}
		out = append(out, short(k))
	}
	return out
}

func (h *mdlRun) flushExpired() {
	max := [...]int{0, 1, 3, 10}[h.r.IntN(4)]
	n, err := h.d.FlushExpired(max)
	want := 0
	for sh, q := range h.m.queues {
		if max > 0 && want >= max {
			break
		}
		for el := q.Back(); el != nil && (max == 0 || want < max); {
			e, prev := el.Value.(*mdlEntry), el.Prev()
			if h.m.expired(e) {
				h.m.drop(e)
				h.m.expirations[sh]++
				want++
			}
			el = prev
		}
	}
	if n != want || err != nil {
		h.failf("FlushExpired(%d) = %d, %v; want %d, <nil>", max, n, err, want)
	}
	h.note("FlushExpired", err)
}

func (h *mdlRun) flushAll() {
	if err := h.d.FlushAll(); err != nil {
		h.failf("FlushAll() = %v", err)
	}
	h.note("FlushAll", nil)
	for _, e := range h.m.entries {
		h.m.drop(e)
	}
	for sh := range h.m.used {
		if h.m.used[sh] != 0 && h.cfg.mode == mdlExact {
			h.failf("model: %d chunks in use in shard %d after FlushAll", h.m.used[sh], sh)
		}
	}
}

// verifyAll compares the whole zone with the model: Check, the counters,
// each shard's queue with its reference bits, every entry through the
// read-only view (which marks nothing), and in the exact run the chunks in
// use.
func (h *mdlRun) verifyAll() {
	h.t.Helper()
	if err := h.d.Check(); err != nil {
		h.failf("Check() = %v", err)
	}
	st := h.d.Stats()
	if st.Entries != int64(len(h.m.entries)) {
		h.failf("Stats().Entries = %d, model %d", st.Entries, len(h.m.entries))
	}
	for sh := range h.m.queues {
		ss := h.d.ShardStats(sh)
		if ss.Evictions != h.m.evictions[sh] || ss.Expirations != h.m.expirations[sh] {
			h.failf("shard %d: %d evictions, %d expirations; model %d, %d", sh, ss.Evictions, ss.Expirations, h.m.evictions[sh], h.m.expirations[sh])
		}
		keys, refs := mdlQueue(h.d, sh)
		i := 0
		for el := h.m.queues[sh].Back(); el != nil; el = el.Prev() {
			e := el.Value.(*mdlEntry)
			if i >= len(keys) || keys[i] != e.key || refs[i] != e.ref {
				got := "the end"
				if i < len(keys) {
					got = fmt.Sprintf("%q ref %v", short(keys[i]), refs[i])
				}
				h.failf("shard %d queue [%d] from the tail: %s, model %q ref %v", sh, i, got, short(e.key), e.ref)
			}
			i++
		}
		if i != len(keys) {
			h.failf("shard %d queue holds %d entries, model %d", sh, len(keys), i)
		}
	}
	if keys, err := h.d.Keys(0); err != nil || strings.Join(keys, "\n") != strings.Join(h.modelKeys(0), "\n") {
		h.failf("Keys(0) = %d keys, %v; model %d", len(keys), err, len(h.modelKeys(0)))
	}
	for _, e := range h.m.entries {
		exp := h.m.expired(e)
		v, flags, stale, err := h.ro.GetStale(e.key)
		switch {
		case e.isList:
			n, lerr := h.ro.LLen(e.key)
			want := len(e.elems)
			if exp {
				want = 0
			}
			if !errors.Is(err, ErrIsList) || n != want || lerr != nil {
				h.failf("read-only GetStale(%q), LLen = %v, %d, %v; want %v, %d, <nil>", short(e.key), err, n, lerr, ErrIsList, want)
			}
		case err != nil || !v.Equal(e.val) || flags != e.flags || stale != exp:
			h.failf("read-only GetStale(%q) = %s %q, %d, stale %v, %v; want %s %q, %d, stale %v", short(e.key), v.Kind(), short(v.String()), flags, stale, err, e.val.Kind(), short(e.val.String()), e.flags, exp)
		}
		ttl, err := h.ro.TTL(e.key)
		var want time.Duration
		var wantErr error
		switch {
		case exp:
			wantErr = ErrNotFound
		case e.expiry != 0:
			want = time.Duration(e.expiry-h.m.now()) * time.Millisecond
		}
		if ttl != want || !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
			h.failf("read-only TTL(%q) = %v, %v; want %v, %v", short(e.key), ttl, err, want, wantErr)
		}
	}
	for _, k := range h.keys {
		if h.m.entries[k] == nil {
			if _, _, _, err := h.ro.GetStale(k); !errors.Is(err, ErrNotFound) {
				h.failf("read-only GetStale(%q) of an absent key = %v, want %v", short(k), err, ErrNotFound)
			}
		}
	}
	if h.cfg.mode == mdlExact {
		used := 0
		for _, r := range h.d.SlabStats() {
			if r.Size != mdlChunk && r.Used != 0 {
				h.failf("slab class %d holds %d chunks in the exact run", r.Size, r.Used)
			}
			if r.Size == mdlChunk {
				used = r.Used
			}
		}
		if used != h.m.used[0] {
			h.failf("%d chunks in use, model %d", used, h.m.used[0])
		}
	}
}

// mdlQueue returns a shard's eviction queue from the tail: each entry's key
// and reference bit. The shard must have passed Check.
func mdlQueue(d *Dict, sh int) (keys []string, refs []bool) {
	s := &d.shards[sh]
	d.lock(s)
	defer d.unlock(s)
	for off := s.hdr().LRUTail; off != 0; off = s.entryAt(off).Prev {
		e := s.entryAt(off)
		keys = append(keys, string(s.keyOf(off, e)))
		refs = append(refs, e.Bits&refBit != 0)
	}
	return keys, refs
}
