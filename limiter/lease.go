package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Leases. A plain Conn counts a key's requests in one int: a process killed
// between Incoming and Leaving leaves its slots counted for ever. A leased
// Conn keeps, instead, one record per holder (a Conn in a process) under the
// key, {holder, slots, expiry}, and counts only the slots of records whose
// lease has not expired. Every write of a holder renews its lease to now +
// lease, and Renew renews every key the holder has slots of. A holder that
// dies stops renewing, and its slots come back at most one lease after its
// last write; expired records are dropped by the next write to the key.
//
// The trade-off: a request that runs longer than the lease, in a process
// that neither writes the key nor calls Renew meanwhile, loses its slot, so
// the key may admit one request too many until it leaves (and its Leaving
// then finds no slot: ErrNotFound). Choose a lease longer than the slowest
// request, or call Renew more often than once per lease. A decision reads
// and rewrites up to MaxHolders records (24 bytes each) instead of one int,
// and records this Conn's keys in a process-local map (one allocation per
// new key).

// MaxHolders is the most holders that may hold slots of one leased key at
// the same time. A holder is a Conn, usually one per process.
const MaxHolders = 64

// maxLeaseMs is the longest lease, in ms: a day. A request that runs longer
// is kept by Renew. It bounds the expiry a record can hold (badLease).
const maxLeaseMs = int64(24 * time.Hour / time.Millisecond)

// leases is a leased Conn's lease state in this process.
type leases struct {
	ttl    int64  // the lease, ms
	holder uint64 // this Conn's id: pid << 32 | random
	mu     sync.Mutex
	held   map[string]int64 // slots this Conn holds per key, for Renew
}

// leaseBufs holds buffers for a leased key's records.
var leaseBufs = sync.Pool{New: func() any { return new([MaxHolders * leaseSize]byte) }}

// NewLeasedConn is NewConn with leases. If a holder stops writing the key
// and renewing, as a killed process does, its slots come back within lease.
// Call Renew to keep the slots of requests that run longer than lease. A
// leased Conn is a kind of its own. It never shares a key with a plain Conn
// of the same name, whose value it could not read.
//
// NewLeasedConn returns the errors of NewConn. It returns ErrBadDelay if
// lease is shorter than a millisecond or longer than a day.
func NewLeasedConn(d *dict.Dict, name string, max, burst int64, delay, lease time.Duration) (*Conn, error) {
	c, err := newConn(d, kindLeasedConn, name, max, burst, delay)
	if err != nil {
		return nil, err
	}
	if lease < time.Millisecond || lease.Milliseconds() > maxLeaseMs {
		return nil, fmt.Errorf("%w: lease %v", ErrBadDelay, lease)
	}
	c.lease = &leases{
		ttl:    lease.Milliseconds(),
		holder: uint64(os.Getpid())<<32 | uint64(rand.Uint32()),
		held:   make(map[string]int64),
	}
	if err := c.claim(d, connParams(max, burst, delay)+fmt.Sprintf(", lease %v", lease)); err != nil {
		return nil, err
	}
	c.tune.init(d, kindLeasedConn, name, record{Limit: max, Burst: float64(burst), DelayNs: int64(delay), LeaseMs: lease.Milliseconds()}, connNumsOf)
	return c, nil
}

// leaseEdit is the outcome of one read-modify-write of a leased key.
type leaseEdit struct {
	total    int64 // live slots after the edit
	own      int64 // this holder's slots before the edit
	bad      foreign
	tooMany  bool
	rejected bool
}

// edit rewrites c's key's records at now under the shard lock: it drops
// dead records, adds delta to this holder's slots unless a positive delta
// would pass limit (a negative delta takes at most the slots the holder
// has), renews the holder's lease when it holds slots, and stores the live
// records (or deletes the key when none is left). With delta 0 it only
// renews.
func (ls *leases) edit(c *Conn, key string, now, delta, limit int64) (leaseEdit, error) {
	buf := leaseBufs.Get().(*[MaxHolders * leaseSize]byte)
	defer leaseBufs.Put(buf)
	var kb keyBuf
	zk := c.key(&kb, key)
	var e leaseEdit
	fn := func(cur dict.Value, found bool) (dict.Value, time.Duration, bool) {
		e = leaseEdit{} // fn may run twice (dict.Update), and again on a retry: each call starts afresh
		var b []byte
		if found {
			if !validLeases(cur) {
				e.bad = foreignOf(cur)
				return dict.Value{}, 0, true // leave it as it is
			}
			b = cur.Bytes()
		}
		n, total, own, bad := ls.scan(b, now, buf[:])
		if bad != "" {
			e.bad = badOf(cur, bad)
			return dict.Value{}, 0, true // leave it as it is
		}
		e.own = own.slots
		switch {
		case delta > 0 && total > limit-delta: // total may be MaxInt64 (scan saturates)
			e.rejected = true
		case delta > 0 && own.slots == 0 && n == len(buf):
			e.tooMany = true // no room for this holder's record
		case delta < 0 && own.slots+delta < 0:
			total -= own.slots // all it has: leave reports the shortfall
			own.slots = 0
		default:
			own.slots += delta
			total += delta
		}
		if own.slots > 0 {
			own.holder, own.expiry = ls.holder, now+ls.ttl
			putLease(buf[n:], own)
			n += leaseSize
		}
		e.total = total
		if n == 0 {
			return cur, 0, false
		}
		return dict.Bytes(buf[:n]), ttlOf(buf[:n], now), true
	}
	out, err := c.d.UpdateOutcome(zk, fn)
	if out != (dict.Outcome{}) || err != nil {
		err = c.settle(c.d, out, err, func() (dict.Outcome, error) { return c.d.UpdateOutcome(zk, fn) })
	}
	if err != nil {
		return e, dictErr(zk, err)
	}
	if e.bad.found() {
		return e, e.bad.err(zk)
	}
	if e.tooMany {
		return e, fmt.Errorf("%w: key %q", ErrTooManyHolders, strings.Clone(zk))
	}
	return e, nil
}

// validLeases reports whether v can be a leased key's records.
func validLeases(v dict.Value) bool {
	return v.Kind() == dict.KindBytes && v.Len() > 0 && v.Len()%leaseSize == 0 && v.Len() <= MaxHolders*leaseSize
}

// scan copies the live records of b but this holder's into dst (nil: copies
// nothing) and returns the bytes copied, the live slots of every holder, and
// this holder's live record (zero when it has none). It returns what is
// wrong with the first record that no Conn writes (badLease), and then
// nothing else.
func (ls *leases) scan(b []byte, now int64, dst []byte) (n int, total int64, own lease, bad string) {
	for off := 0; off+leaseSize <= len(b); off += leaseSize {
		r := getLease(b[off:])
		if bad = badLease(r, now); bad != "" {
			return 0, 0, lease{}, bad
		}
		if r.expiry <= now {
			continue
		}
		total = satAdd(total, r.slots)
		if r.holder == ls.holder {
			own = r
			continue
		}
		if dst != nil {
			putLease(dst[n:], r)
			n += leaseSize
		}
	}
	return n, total, own, ""
}

// ttlOf returns the time from now to the last expiry of records b, at most
// maxTTL: a record no Conn writes may expire further ahead than a Duration
// holds in ns.
func ttlOf(b []byte, now int64) time.Duration {
	var last int64
	for off := 0; off+leaseSize <= len(b); off += leaseSize {
		last = max(last, getLease(b[off:]).expiry)
	}
	if last > satAdd(now, int64(maxTTL/time.Millisecond)) {
		return maxTTL
	}
	return time.Duration(last-now) * time.Millisecond
}

// incoming is Conn.incomingAt with leases, of cost n, at most limit.
func (ls *leases) incoming(dec *Decision, c *Conn, now int64, key string, n int64, p *connNums, commit bool) error {
	limit := p.limit
	if !commit {
		buf := leaseBufs.Get().(*[MaxHolders * leaseSize]byte)
		defer leaseBufs.Put(buf)
		var kb keyBuf
		v, _, err := read(c.d, c.key(&kb, key), buf[:], validLeases)
		if err != nil {
			return err
		}
		_, total, _, bad := ls.scan(v.Bytes(), now, nil) // none when absent
		if bad != "" {
			return badOf(v, bad).err(c.key(&kb, key))
		}
		if total > limit-n { // total may be MaxInt64 (scan saturates)
			dec.State = float64(total) + float64(n)
			return nil
		}
		c.decide(dec, float64(total+n), p, false)
		return nil
	}
	e, err := ls.edit(c, key, now, n, limit)
	if err != nil {
		return err
	}
	if e.rejected {
		dec.State = float64(e.total) + float64(n)
		return nil
	}
	ls.mu.Lock()
	ls.held[key] += n
	ls.mu.Unlock()
	c.decide(dec, float64(e.total), p, true)
	return nil
}

// leave is Conn.LeavingN with leases, of cost n.
func (ls *leases) leave(c *Conn, now int64, key string, n int64) (int64, error) {
	e, err := ls.edit(c, key, now, -n, 0)
	if err != nil {
		return 0, err
	}
	ls.mu.Lock()
	if ls.held[key] -= n; ls.held[key] <= 0 {
		delete(ls.held, key)
	}
	ls.mu.Unlock()
	if e.own < n {
		return e.total, fmt.Errorf("limiter: leaving %q: %d of %d slots live in this holder: %w", key, e.own, n, ErrNotFound)
	}
	return e.total, nil
}

// Renew renews this Conn's leases on every key it holds slots of. Requests
// that run longer than the lease then keep their slots. Call Renew more
// often than once per lease, for example from a time.Ticker. Slots whose
// lease has already expired are not brought back. Without leases, Renew
// does nothing.
//
// Renew tries every key, and returns the first error it met.
func (c *Conn) Renew(ctx context.Context) error {
	ls := c.lease
	if ls == nil {
		return nil
	}
	ls.mu.Lock()
	keys := make([]string, 0, len(ls.held))
	for k := range ls.held {
		keys = append(keys, k)
	}
	ls.mu.Unlock()
	now := c.d.Now()
	var first error
	for _, k := range keys {
		e, err := ls.edit(c, k, now, 0, 0)
		if err == nil && e.own <= 0 {
			ls.mu.Lock()
			delete(ls.held, k) // expired: nothing left to renew
			ls.mu.Unlock()
		}
		if first == nil {
			first = err
		}
	}
	return first
}
