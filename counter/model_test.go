package counter

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// The model test runs random operations on a Counter and on a model of it
// (a map of unsynced deltas, and a map of what the zone holds) and
// compares them after each: every Get, every Sync's outcome, and the
// figures of Stats. Keys are few, so keys are retired (the Counter sweeps
// every 1 to 3 syncs), made bytes so that syncs fail, mended, reset and
// pinned by Handles, all on the same keys. The seed comes from
// testutil.Seed: a failing run prints the command that replays it.

const (
	mdlOps  = 20_000
	mdlKeys = 6
)

// mdlZone is a key's value in the model zone.
type mdlZone struct {
	n     int64
	bytes bool // holds bytes: Incr fails with ErrNotNumber
}

type mdlRun struct {
	t        *testing.T
	seed     uint64
	op       int
	c        *Counter
	d        *dict.Dict
	local    map[string]int64 // unsynced deltas, kept ones included
	zone     map[string]mdlZone
	handles  map[string]*Handle
	failures uint64
}

func TestModel(t *testing.T) {
	seed := testutil.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	c, d := newInternal(t, 1+r.Uint64N(3))
	m := &mdlRun{t: t, seed: seed, c: c, d: d,
		local: map[string]int64{}, zone: map[string]mdlZone{}, handles: map[string]*Handle{}}
	for m.op = 0; m.op < mdlOps; m.op++ {
		k := "k" + strconv.Itoa(r.IntN(mdlKeys))
		n := int64(r.IntN(11)) - 3
		switch p := r.IntN(100); {
		case p < 45:
			c.Incr(k, n)
			m.local[k] += n
		case p < 55:
			m.handle(k).Add(n)
			m.local[k] += n
		case p < 75:
			m.sync()
		case p < 80:
			if _, err := d.Set(k, dict.String("x"), 0, 0); err != nil {
				m.failf("Set(%q, bytes) = %v", k, err)
			}
			m.zone[k] = mdlZone{bytes: true}
		case p < 88:
			if err := d.Delete(k); err != nil {
				m.failf("Delete(%q) = %v", k, err)
			}
			delete(m.zone, k)
		case p < 92:
			m.reset(k, n)
		default:
			m.get(k)
		}
	}
	m.sync()
	for i := 0; i < mdlKeys; i++ {
		m.get("k" + strconv.Itoa(i))
	}
}

func (m *mdlRun) failf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("op %d (seed %d): %s", m.op, m.seed, fmt.Sprintf(format, args...))
}

func (m *mdlRun) handle(k string) *Handle {
	h := m.handles[k]
	if h == nil {
		h = m.c.Key(k)
		m.handles[k] = h
	}
	return h
}

// sync syncs both and compares the outcome: which keys failed, with what,
// and the figures.
func (m *mdlRun) sync() {
	m.t.Helper()
	kept := 0
	for k, n := range m.local {
		if n == 0 {
			continue
		}
		z := m.zone[k]
		if z.bytes {
			kept++
			continue
		}
		m.zone[k] = mdlZone{n: z.n + n}
		m.local[k] = 0
	}
	m.failures += uint64(kept)
	err := m.c.Sync()
	if (kept > 0) != errors.Is(err, dict.ErrNotNumber) || (kept == 0) != (err == nil) {
		m.failf("Sync() = %v; want %d keys failing with %v", err, kept, dict.ErrNotNumber)
	}
	st := m.c.Stats()
	if st.Pending != kept || st.Failures != m.failures || st.Dropped != 0 {
		m.failf("Stats() = %+v; want %d pending, %d failures", st, kept, m.failures)
	}
	for k := range m.zone {
		m.get(k)
	}
}

func (m *mdlRun) reset(k string, n int64) {
	m.t.Helper()
	got, err := m.c.Reset(k, n)
	z, ok := m.zone[k]
	switch {
	case z.bytes:
		if !errors.Is(err, dict.ErrNotNumber) {
			m.failf("Reset(%q, %d) of bytes = %d, %v; want %v", k, n, got, err, dict.ErrNotNumber)
		}
		return
	case !ok:
		z.n = n
	}
	z.n -= n
	m.zone[k] = z
	if err != nil || got != z.n {
		m.failf("Reset(%q, %d) = %d, %v; want %d", k, n, got, err, z.n)
	}
}

func (m *mdlRun) get(k string) {
	m.t.Helper()
	got, err := m.c.Get(k)
	z, ok := m.zone[k]
	var want error
	switch {
	case !ok:
		want = dict.ErrNotFound
	case z.bytes:
		want = dict.ErrNotNumber
	}
	if !errors.Is(err, want) || (want == nil && (err != nil || got != z.n)) {
		m.failf("Get(%q) = %d, %v; want %d, %v", k, got, err, z.n, want)
	}
}
