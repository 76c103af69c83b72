package limiter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// A key flood: clients held at their limit in a small zone while a flood
// of one-request keys goes through the same limiter. Each held
// client's decisions must be those of a twin limiter of the same kind and
// parameters on a zone too big to evict, fed only the held clients'
// requests at the same injected times: eviction may forget the flood's
// states, which carry nothing, never a held client's.

// statLimiter is a limiter of this package with its Stats.
type statLimiter interface {
	Limiter
	Stats() Stats
}

// floodKind builds a limiter of one kind, every one of them named
// floodName: limiters of the same kind and name over one zone share each
// key's state, so the flood and the held clients, each through a limiter of
// its own (for its own Stats), meet in one namespace.
type floodKind struct {
	name string
	new  func(d *dict.Dict) (statLimiter, error)
}

const floodName = "api"

// floodKinds hold a client that retries every 100 ms at its limit: each
// admits about one request in ten or eleven and rejects the others.
var floodKinds = []floodKind{
	{"req", func(d *dict.Dict) (statLimiter, error) { return NewReq(d, floodName, 1, 0) }},
	{"count", func(d *dict.Dict) (statLimiter, error) { return NewCount(d, floodName, 5, time.Second) }},
	{"gcra", func(d *dict.Dict) (statLimiter, error) { return NewGCRA(d, floodName, 1, 1) }},
	{"sliding", func(d *dict.Dict) (statLimiter, error) { return NewSlidingWindow(d, floodName, 5, time.Second) }},
}

// twinZoneSize is the twins' zone: big enough never to evict what the
// tests' held clients keep.
const twinZoneSize = 64 << 20

// floodTick is the held clients' retry period, in ms of injected time.
const floodTick = 100

// floodPlan is one flood: held clients retrying every floodTick ms, alone
// for warm ms and then for span ms with perTick new keys every floodTick,
// spread evenly over it, in a zone of zone bytes.
type floodPlan struct {
	zone       int64
	held       int
	perTick    int
	warm, span int64
	twice      bool // each flood key comes back once, a tick after its first request
}

// floodKey returns the flood's i-th key, an IPv6 client address
// (one per /64 of 2001:db8::/32), built in buf.
func floodKey(buf []byte, i int) string {
	buf = append(buf[:0], "2001:db8:"...)
	buf = strconv.AppendUint(buf, uint64(i>>16), 16)
	buf = append(buf, ':')
	buf = strconv.AppendUint(buf, uint64(i&0xffff), 16)
	buf = append(buf, "::1"...)
	return string(buf)
}

// heldKey returns held client i's key, an IPv4 address.
func heldKey(i int) string { return fmt.Sprintf("10.1.%d.%d", i/256, i%256) }

// divergence is a held client's decision that differs from its twin's.
type divergence struct {
	client    int
	at        int64 // ms after t0
	got, want Decision
}

func (v divergence) String() string {
	return fmt.Sprintf("client %s at +%d ms: Incoming = %+v, twin = %+v", heldKey(v.client), v.at, v.got, v.want)
}

// floodResult is what a flood did to the held clients.
type floodResult struct {
	decisions int          // held clients' decisions
	first     []divergence // per client, its first divergence (at -1: none)
	diverged  []int        // per client, its decisions that diverged
	above     []int        // per client, admitted where the twin rejected
	below     int          // decisions rejected where the twin admitted
	rejected  []int        // per client, the twin's rejections during the flood
	errs      int          // decisions (held or flood) that returned an error
	firstErr  string
	floodKeys int
	evicted   uint64     // the held clients' limiter's Stats().Evicted
	zone      dict.Stats // the small zone's, at the end
}

// runFlood plays p with kind k and returns what the held clients met.
func runFlood(t *testing.T, k floodKind, p floodPlan) floodResult {
	t.Helper()
	small, clk := zonetest.Open(t, dict.Options{Size: p.zone})
	big, _ := zonetest.Open(t, dict.Options{Size: twinZoneSize, Clock: clk.UnixMilli})
	held, err1 := k.new(small)
	flood, err2 := k.new(small)
	twin, err3 := k.new(big)
	if err := errorsJoin(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	r := floodResult{
		first:    make([]divergence, p.held),
		diverged: make([]int, p.held),
		above:    make([]int, p.held),
		rejected: make([]int, p.held),
	}
	keys := make([]string, p.held)
	// byMs[m] are the clients that retry at m ms into each tick.
	byMs := make([][]int, floodTick)
	for i := range keys {
		keys[i] = heldKey(i)
		r.first[i].at = -1
		m := int64(i) * floodTick / int64(p.held)
		byMs[m] = append(byMs[m], i)
	}
	fail := func(what string, err error) {
		if r.errs == 0 {
			r.firstErr = what + ": " + err.Error()
		}
		r.errs++
	}
	ctx := context.Background()
	kb := make([]byte, 0, 40)
	for at := int64(0); at < p.warm+p.span; at++ {
		clk.SetMilli(at)
		m := at % floodTick
		for _, i := range byMs[m] {
			got, err := held.Incoming(ctx, keys[i], true)
			if err != nil {
				fail(fmt.Sprintf("client %s at +%d ms", keys[i], at), err)
			}
			want, err := twin.Incoming(ctx, keys[i], true)
			if err != nil {
				t.Fatalf("twin: client %s at +%d ms: %v", keys[i], at, err)
			}
			r.decisions++
			if at >= p.warm && !want.Allowed {
				r.rejected[i]++
			}
			if got == want {
				continue
			}
			if r.diverged[i] == 0 {
				r.first[i] = divergence{client: i, at: at, got: got, want: want}
			}
			r.diverged[i]++
			switch {
			case got.Allowed && !want.Allowed:
				r.above[i]++
			case !got.Allowed && want.Allowed:
				r.below++
			}
		}
		if at < p.warm {
			continue
		}
		// The flood's keys for this millisecond of the tick.
		lo, hi := int(m)*p.perTick/floodTick, int(m+1)*p.perTick/floodTick
		for j := lo; j < hi; j++ {
			key := floodKey(kb, r.floodKeys)
			r.floodKeys++
			if _, err := flood.Incoming(ctx, key, true); err != nil {
				fail(fmt.Sprintf("flood key %s at +%d ms", key, at), err)
			}
			if !p.twice || at < p.warm+floodTick {
				continue
			}
			// The key of a tick ago comes back.
			key = floodKey(kb, r.floodKeys-1-p.perTick)
			if _, err := flood.Incoming(ctx, key, true); err != nil {
				fail(fmt.Sprintf("flood key %s again at +%d ms", key, at), err)
			}
		}
	}
	r.evicted = held.Stats().Evicted
	r.zone = small.Stats()
	return r
}

// report checks r: no error, every held client's decisions its twin's,
// none diverged, Evicted 0, and every held client limited during the flood
// (else the test shows nothing). Its messages say which client, when, what
// was decided and what the twin decided, and how many diverged.
func (r floodResult) report(t *testing.T, p floodPlan) {
	t.Helper()
	t.Logf("%d held clients, %d decisions; %d flood keys; zone: %d entries, %d evictions, %d expirations reclaimed; Evicted %d",
		p.held, r.decisions, r.floodKeys, r.zone.Entries, r.zone.Evictions, r.zone.Expirations, r.evicted)
	if r.errs > 0 {
		t.Errorf("%d decisions returned an error; the first: %s", r.errs, r.firstErr)
	}
	clients, above, worst := 0, 0, -1
	var shown []string
	for i, n := range r.diverged {
		if n == 0 {
			continue
		}
		clients++
		above += r.above[i]
		if worst < 0 || r.above[i] > r.above[worst] {
			worst = i
		}
		if len(shown) < 5 {
			shown = append(shown, r.first[i].String())
		}
	}
	if clients > 0 {
		per := p.warm/floodTick + p.span/floodTick
		t.Errorf("%d of %d held clients diverged from their twins: %d decisions admitted above the twin's, %d rejected below it; most admitted above: client %s, on %d of its %d retries; first divergences:\n\t%s",
			clients, p.held, above, r.below, heldKey(worst), r.above[worst], per, strings.Join(shown, "\n\t"))
	}
	if r.evicted != 0 {
		t.Errorf("held clients' Stats().Evicted = %d, want 0", r.evicted)
	}
	for i, n := range r.rejected {
		if n == 0 {
			t.Errorf("client %s: the twin rejected none of its requests during the flood: the plan holds no client at its limit", heldKey(i))
			break
		}
	}
}

// TestFloodHeldClients is an address flood against a 256 KiB zone: 200
// clients held at their limit, retrying every 100 ms, alone for 2 s, then
// for 20 s with 1,000,000 one-request keys (5,000 every 100 ms). No held
// client may be admitted above its limit, nor below it, no decision may
// fail, and the held clients' limiter counts no evicted state. Under the
// race detector the flood is a tenth as long (floodRacePlan).
func TestFloodHeldClients(t *testing.T) {
	p := floodFullPlan
	if raceEnabled {
		p = floodRacePlan
	}
	for _, k := range floodKinds {
		t.Run("kind="+k.name, func(t *testing.T) {
			runFlood(t, k, p).report(t, p)
		})
	}
}

// TestFloodTwiceHeldClients is TestFloodHeldClients with a flood of keys
// that each come back once, a tick later: each is found among the traces
// of the keys evicted, and joins the protected segment. The held clients,
// used since, must keep their states all the same.
func TestFloodTwiceHeldClients(t *testing.T) {
	p := floodFullPlan
	if raceEnabled {
		p = floodRacePlan
	}
	p.twice = true
	for _, k := range floodKinds {
		t.Run("kind="+k.name, func(t *testing.T) {
			runFlood(t, k, p).report(t, p)
		})
	}
}

// floodFullPlan is that flood; floodRacePlan the same for 2 s of flood
// instead of 20 (100,000 keys), which still turns the zone over many
// times, for the race detector's decisions, ten times slower.
var (
	floodFullPlan = floodPlan{zone: 256 << 10, held: 200, perTick: 5000, warm: 2000, span: 20000}
	floodRacePlan = floodPlan{zone: 256 << 10, held: 200, perTick: 5000, warm: 2000, span: 2000}
)
