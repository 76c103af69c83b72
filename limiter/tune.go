package limiter

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

// Numbers in the zone (DESIGN.md, section 12). Each limiter reads its
// numbers from its zone, not from its constructor alone:
//
//   - built: the newest construction's, in the "meta|kind|name" record;
//   - live: an operator's, in the zone's registry, which no eviction reaches.
//
// Live numbers win over built ones. A limiter caches the numbers in force
// with the registry's generation it read them at. Its decision path
// compares that with one atomic load of the generation.

// tuned is a limiter's numbers: what it was built with, and the numbers in
// force, derived into N, the form its decisions use.
type tuned[N any] struct {
	d      *dict.Dict
	kind   string
	name   string
	key    uint64 // the registry key: regKey(kind, name)
	dryKey string // the zone key of the dry-run count: dryRunKey(kind, name)
	built  record // this limiter's construction
	// derive makes the decisions' form of a record's numbers. It returns
	// an error for numbers the constructor refuses.
	derive func(record) (N, error)
	mu     sync.Mutex                 // serialises reloads
	cur    atomic.Pointer[inForce[N]] // never nil after init
}

// inForce is a tuned's numbers in force, as of a generation.
type inForce[N any] struct {
	gen  uint64
	n    N
	rec  record // the numbers in force
	base record // the built numbers under them, kept while the meta record is gone
}

// regKey returns the registry key of a limiter: a hash of "kind|name",
// never 0.
func regKey(kind, name string) uint64 {
	k := xxhash.Sum64String(kind + "|" + name)
	if k == 0 {
		k = 1
	}
	return k
}

// init publishes built as the newest construction's numbers, unless the
// zone has them already, and reads the numbers in force. A read-only zone,
// or one without room, goes without the record.
func (t *tuned[N]) init(d *dict.Dict, kind, name string, built record, derive func(record) (N, error)) {
	t.d, t.kind, t.name, t.built, t.derive = d, kind, name, built, derive
	t.key = regKey(kind, name)
	t.dryKey = dryRunKey(kind, name)
	if zb, ok := readBuilt(d, kind, name); !ok || zb.numbers() != built.numbers() {
		before, known := inForceOf(d, kind, name, nil)
		applyOnce(d, kind, name, &built, 0)
		if after, _ := inForceOf(d, kind, name, &built); known {
			applyLowerRate(d, kind, name, before, after)
		}
	}
	n, _ := derive(built)
	t.cur.Store(&inForce[N]{gen: ^d.Generation(), n: n, rec: built, base: built.numbers()})
	t.reload()
}

// nums returns the numbers in force. It costs one atomic load of the
// zone's generation when nothing changed.
func (t *tuned[N]) nums() *N {
	c := t.cur.Load()
	if t.d.Generation() != c.gen {
		c = t.reload()
	}
	return &c.n
}

// dryRun reports whether a live dry run is in force. It costs what nums
// costs.
func (t *tuned[N]) dryRun() bool {
	c := t.cur.Load()
	if t.d.Generation() != c.gen {
		c = t.reload()
	}
	return c.rec.dryRun
}

// numbers returns the numbers in force as a record.
func (t *tuned[N]) numbers() record {
	t.nums()
	return t.cur.Load().rec
}

// reload reads the numbers in force from the zone. It reads the
// generation first: a change after it moves the generation again, and
// the next decision reloads. Without a meta record, evicted or unread,
// the built numbers last read stay, not this limiter's own: processes
// built with other numbers keep deciding by the same ones.
func (t *tuned[N]) reload() *inForce[N] {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.d.Generation()
	c := t.cur.Load()
	if c.gen == g {
		return c
	}
	base, _ := builtOf(t.d, t.kind, t.name, &c.base)
	rec := liveOver(t.d, t.kind, t.name, base)
	n, err := t.derive(rec)
	if err != nil { // cannot happen: builtOf and liveOver check what they return
		base, rec = t.built.numbers(), t.built
		n, _ = t.derive(rec)
	}
	c = &inForce[N]{gen: g, n: n, rec: rec.numbers(), base: base}
	t.cur.Store(c)
	return c
}

// set stores live numbers for the limiter, and reads them back. It checks
// them over the numbers in force first.
func (t *tuned[N]) set(l live) error {
	before := t.numbers()
	if _, err := t.derive(l.over(before)); err != nil {
		return err
	}
	if err := setLive(t.d, t.key, l); err != nil {
		return fmt.Errorf("limiter: set %s %q: %w", t.kind, t.name, err)
	}
	return t.applied(before)
}

// unset drops the limiter's live numbers and reads the numbers in force.
func (t *tuned[N]) unset() error {
	before := t.numbers()
	if _, err := t.d.DeleteRecord(t.key); err != nil {
		return fmt.Errorf("limiter: unset %s %q: %w", t.kind, t.name, err)
	}
	return t.applied(before)
}

// applied applies a change of the numbers in force, from before, to the
// limiter's open states.
func (t *tuned[N]) applied(before record) error {
	if err := applyOnce(t.d, t.kind, t.name, nil, before.Limit); err != nil {
		return err
	}
	return applyLowerRate(t.d, t.kind, t.name, before, t.numbers())
}

// inForceOf returns the numbers in force of the limiter of kind named
// name: the newest construction's, or else *fallback, with the live
// numbers over them. It reports false when it knows none: no construction
// recorded and no fallback. Numbers the kind refuses are passed over.
func inForceOf(d *dict.Dict, kind, name string, fallback *record) (record, bool) {
	base, ok := builtOf(d, kind, name, fallback)
	if !ok {
		return record{}, false
	}
	return liveOver(d, kind, name, base), true
}

// builtOf returns the numbers of the newest construction of the limiter
// of kind named name, or else *fallback. It reports false when it knows
// neither. Numbers the kind refuses are passed over.
func builtOf(d *dict.Dict, kind, name string, fallback *record) (record, bool) {
	base, ok := readBuilt(d, kind, name)
	if ok && kindChecks[kind](base) != nil {
		ok = false
	}
	if !ok {
		if fallback == nil {
			return record{}, false
		}
		base = *fallback
	}
	return base.numbers(), true
}

// liveOver returns base with the live numbers of the limiter over it.
// Live numbers the kind refuses over base are passed over.
func liveOver(d *dict.Dict, kind, name string, base record) record {
	if l, found := readLive(d, regKey(kind, name)); found {
		if r := l.over(base); kindChecks[kind](r) == nil {
			return r
		}
	}
	return base
}

// kindChecks checks a record's numbers for each kind, as its constructor
// does.
var kindChecks = map[string]func(record) error{
	kindReq:        func(r record) error { _, err := reqNumsOf(r); return err },
	kindCount:      func(r record) error { _, err := countNumsOf(r); return err },
	kindSW:         func(r record) error { _, err := swNumsOf(r); return err },
	kindGCRA:       func(r record) error { _, err := gcraNumsOf(r); return err },
	kindConn:       func(r record) error { _, err := connNumsOf(r); return err },
	kindLeasedConn: func(r record) error { _, err := connNumsOf(r); return err },
}

// Live fields: which numbers a live record sets.
const (
	liveRate   = 1 << iota // word 0, a float64
	liveLimit              // word 0, an int64
	liveBurst              // word 1, a float64
	liveWindow             // word 2, nanoseconds
	liveDryRun             // word 4, bit liveDryRunOn
)

// liveDryRunOn is the bit of word 4 that holds a live dry run's switch.
const liveDryRunOn = 1 << 8

// live is a limiter's live numbers, as the registry record holds them:
//
//	word 0: Rate (float64 bits) or Limit
//	word 1: Burst (float64 bits)
//	word 2: WindowNs
//	word 3: when, Unix ms
//	word 4: the fields set (low 8 bits), the dry run's switch (bit 8),
//	        the setter's pid (high 32)
type live struct {
	set   uint8
	dry   bool // the dry run's switch, when set has liveDryRun
	rate  float64
	limit int64
	burst float64
	win   int64
	at    int64
	pid   int
}

func (l live) words() [shm.RecordWords]uint64 {
	var w [shm.RecordWords]uint64
	if l.set&liveRate != 0 {
		w[0] = math.Float64bits(l.rate)
	} else {
		w[0] = uint64(l.limit)
	}
	w[1] = math.Float64bits(l.burst)
	w[2] = uint64(l.win)
	w[3] = uint64(l.at)
	w[4] = uint64(l.set) | uint64(uint32(l.pid))<<32
	if l.dry {
		w[4] |= liveDryRunOn
	}
	return w
}

func liveOf(w [shm.RecordWords]uint64) live {
	l := live{set: uint8(w[4]), burst: math.Float64frombits(w[1]), win: int64(w[2]), at: int64(w[3]), pid: int(w[4] >> 32)}
	l.dry = l.set&liveDryRun != 0 && w[4]&liveDryRunOn != 0
	if l.set&liveRate != 0 {
		l.rate = math.Float64frombits(w[0])
	} else {
		l.limit = int64(w[0])
	}
	return l
}

// merge returns l with the fields n sets taken from n.
func (l live) merge(n live) live {
	if n.set&liveRate != 0 {
		l.rate, l.limit = n.rate, 0
		l.set = l.set&^liveLimit | liveRate
	}
	if n.set&liveLimit != 0 {
		l.limit, l.rate = n.limit, 0
		l.set = l.set&^liveRate | liveLimit
	}
	if n.set&liveBurst != 0 {
		l.burst = n.burst
		l.set |= liveBurst
	}
	if n.set&liveWindow != 0 {
		l.win = n.win
		l.set |= liveWindow
	}
	if n.set&liveDryRun != 0 {
		l.dry = n.dry
		l.set |= liveDryRun
	}
	l.at, l.pid = n.at, n.pid
	return l
}

// over returns r with the fields l sets taken from l.
func (l live) over(r record) record {
	if l.set&liveRate != 0 {
		r.Rate = l.rate
	}
	if l.set&liveLimit != 0 {
		r.Limit = l.limit
	}
	if l.set&liveBurst != 0 {
		r.Burst = l.burst
	}
	if l.set&liveWindow != 0 {
		r.WindowNs = l.win
	}
	if l.set&liveDryRun != 0 {
		r.dryRun = l.dry
	}
	return r
}

// readLive returns the live numbers the registry holds under key.
func readLive(d *dict.Dict, key uint64) (live, bool) {
	r, ok, err := d.LoadRecord(key)
	if err != nil || !ok {
		return live{}, false
	}
	l := liveOf(r.Data)
	return l, l.set != 0
}

// setLive merges l into the live numbers under key, stamped now and with
// this process's pid.
func setLive(d *dict.Dict, key uint64, l live) error {
	l.at, l.pid = d.Now(), os.Getpid()
	return d.UpdateRecord(key, func(w *[shm.RecordWords]uint64, found bool) bool {
		old := live{}
		if found {
			old = liveOf(*w)
		}
		*w = old.merge(l).words()
		return true
	})
}

// readBuilt returns the newest construction's numbers of a limiter, as
// its zone records them.
func readBuilt(d *dict.Dict, kind, name string) (record, bool) {
	v, _, err := d.Get(metaKind + "|" + kind + "|" + name)
	if err != nil || v.Kind() != dict.KindBytes {
		return record{}, false
	}
	var r record
	if json.Unmarshal(v.Bytes(), &r) != nil {
		return record{}, false
	}
	return r, true
}
