package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Conn limits concurrency, as lua-resty-limit-traffic's resty.limit.conn.
// Up to max requests of a key run at once. Up to burst more wait a delay
// that grows with their number, and more are rejected. Every request that
// Incoming counted must be ended by Leaving or Uncommit.
//
// A plain Conn keeps one dict int per key, without TTL. It is the number of
// requests in flight across every process. A process that dies between
// Incoming and Leaving leaks its slots for ever. Nothing can tell them from
// slots of requests still running. NewLeasedConn trades a little speed for
// recovery.
//
// Its numbers live in its zone. SetMax and SetBurst change them for every
// process. Requests in flight stay counted against the new numbers.
//
// The zero value is not usable: create a Conn with NewConn or
// NewLeasedConn.
type Conn struct {
	space
	d         *dict.Dict
	tune      tuned[connNums]
	unitDelay atomic.Int64 // nanoseconds; per process, as in the Lua module
	lease     *leases      // nil: no leases
}

// NewConn returns a concurrency limiter named name over d. It runs max
// requests of a key at once. Up to burst more are delayed by delay for each
// max requests ahead of them. delay is the initial unit delay, the expected
// latency of a request. Leaving's latencies adjust it in this process.
//
// NewConn returns ErrNilDict if d is nil, ErrBadName if CheckName refuses
// name, and ErrBadLimit if max is below 1. It returns ErrBadBurst if burst
// is negative, and ErrBadDelay if delay is negative. It returns
// ErrNameClash if a live Conn of this process has the same name and zone
// but other parameters. Only the parameters given here count, not those
// that SetMax and SetBurst set later.
func NewConn(d *dict.Dict, name string, max, burst int64, delay time.Duration) (*Conn, error) {
	c, err := newConn(d, kindConn, name, max, burst, delay)
	if err != nil {
		return nil, err
	}
	if err := c.claim(d, connParams(max, burst, delay)); err != nil {
		return nil, err
	}
	c.tune.init(d, kindConn, name, record{Limit: max, Burst: float64(burst), DelayNs: int64(delay)}, connNumsOf)
	return c, nil
}

// connNums is a Conn's numbers.
type connNums struct {
	max   int64
	burst int64
	limit int64 // max+burst, saturating at MaxInt64
}

// connNumsOf derives a Conn's numbers from r's Limit, its max, and Burst.
// It returns NewConn's errors for numbers NewConn refuses.
func connNumsOf(r record) (connNums, error) {
	if r.Limit < 1 {
		return connNums{}, fmt.Errorf("%w: max %d", ErrBadLimit, r.Limit)
	}
	if !(r.Burst >= 0) || r.Burst != math.Trunc(r.Burst) {
		return connNums{}, fmt.Errorf("%w: %v", ErrBadBurst, r.Burst)
	}
	burst := int64(math.MaxInt64)
	if r.Burst < math.MaxInt64 {
		burst = int64(r.Burst)
	}
	return connNums{max: r.Limit, burst: burst, limit: satAdd(r.Limit, burst)}, nil
}

// connParams describes a Conn's parameters for claim.
func connParams(max, burst int64, delay time.Duration) string {
	return fmt.Sprintf("max %d, burst %d, delay %v", max, burst, delay)
}

// newConn is NewConn of a kind, kindConn or kindLeasedConn, that claims
// nothing yet.
func newConn(d *dict.Dict, kind, name string, max, burst int64, delay time.Duration) (*Conn, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	sp, err := newSpace(kind, name)
	if err != nil {
		return nil, err
	}
	c := &Conn{space: sp, d: d}
	if _, err := connNumsOf(record{Limit: max, Burst: float64(burst)}); err != nil {
		return nil, err
	}
	if delay < 0 {
		return nil, fmt.Errorf("%w: %v", ErrBadDelay, delay)
	}
	c.unitDelay.Store(int64(delay))
	return c, nil
}

// Policy returns max+burst requests at once, with no window. The sum
// saturates at math.MaxInt64: SetBurst(MaxInt64) is no practical limit,
// not a sum that wraps negative and rejects everything.
func (c *Conn) Policy() Policy { return Policy{Limit: c.tune.nums().limit} }

// Incoming is IncomingN of one slot.
func (c *Conn) Incoming(ctx context.Context, key string, commit bool) (dec Decision, err error) {
	var now int64
	if c.lease != nil {
		now = c.d.Now()
	}
	err = c.incomingAt(&dec, now, key, 1, commit)
	return dec, err
}

// IncomingN decides on a request of cost n for key, which takes n slots.
// State is the number of slots in flight, this request's included. A key
// that a Lua writer or IncrFloat left fractional keeps its fraction in
// State, as in the Lua module. If commit is true, an allowed request is
// counted, and Decision.Committed says so. LeavingN of n must then end it.
// A rejected request is not counted. Delay is the unit delay times the
// number of max-sized groups ahead of the request's last slot. It saturates
// at the longest Duration.
//
// A cost above max+burst is never admitted. It is rejected without reading
// the key, with RetryAfter the longest Duration.
//
// IncomingN returns ErrBadCost if n is below 1. It returns ErrAbused if
// key's value is not this Conn's, ErrBadState if it holds what no Conn
// writes, and the dictionary's errors. A leased Conn returns
// ErrTooManyHolders if MaxHolders other holders hold slots of key.
func (c *Conn) IncomingN(ctx context.Context, key string, n int64, commit bool) (dec Decision, err error) {
	if err := checkCost(n); err != nil {
		return dec, err
	}
	var now int64
	if c.lease != nil {
		now = c.d.Now()
	}
	err = c.incomingAt(&dec, now, key, n, commit)
	return dec, err
}

func (c *Conn) dictionary() *dict.Dict { return c.d }

// incomingAt uses now only for leases.
func (c *Conn) incomingAt(dec *Decision, now int64, key string, cost int64, commit bool) error {
	p := c.tune.nums()
	limit := p.limit
	if cost > limit {
		tooCostly(dec)
		return nil
	}
	if c.lease != nil {
		return c.lease.incoming(dec, c, now, key, cost, p, commit)
	}
	var kb keyBuf
	zk := c.key(&kb, key)
	// The count is a float64: a key a Lua writer or IncrFloat left
	// fractional keeps its fraction, as in the Lua module.
	var conn float64
	if commit {
		n, out, err := c.d.IncrInitNum(zk, cost, 0, 0)
		if out != (dict.Outcome{}) || err != nil {
			err = c.settle(c.d, out, err, func() (o dict.Outcome, err error) {
				n, o, err = c.d.IncrInitNum(zk, cost, 0, 0)
				return o, err
			})
		}
		if err != nil {
			return dictErr(zk, err)
		}
		if err := checkCount(c.d, zk, n, cost); err != nil {
			return err
		}
		if n > float64(limit) {
			if _, err := c.d.Incr(zk, -cost); err != nil {
				return dictErr(zk, err)
			}
			dec.State = n
			return nil
		}
		conn = n
	} else {
		v, found, err := read(c.d, zk, nil, isNumber)
		if err != nil {
			return err
		}
		if why := badCount(v); found && why != "" {
			return badOf(v, why).err(zk)
		}
		conn = v.Float() + float64(cost) // 0 + cost when absent
		if conn > float64(limit) {
			dec.State = conn
			return nil
		}
	}
	c.decide(dec, conn, p, commit)
	return nil
}

// decide fills the zero *dec with an allowing Decision for conn requests
// in flight. Delay, the unit delay times the max-sized groups ahead,
// saturates at the longest Duration.
func (c *Conn) decide(dec *Decision, conn float64, p *connNums, commit bool) {
	dec.Allowed, dec.State, dec.Remaining, dec.Committed = true, conn, floorCount(float64(p.limit)-conn), commit
	if max := p.max; conn > float64(max) {
		unit, groups := c.unitDelay.Load(), floorCount((conn-1)/float64(max))
		if groups > 0 && unit > math.MaxInt64/groups {
			dec.Delay = math.MaxInt64
		} else {
			dec.Delay = time.Duration(unit * groups)
		}
	}
}

// Leaving is LeavingN of one slot.
func (c *Conn) Leaving(ctx context.Context, key string, latency time.Duration) (int64, error) {
	return c.leaving(key, 1, latency)
}

// LeavingN ends a request of cost n that IncomingN counted. It returns the
// number of slots of key still in flight. A Lua writer may have left that
// number fractional. LeavingN then returns it truncated, and the stored
// number keeps its fraction. If LeavingN succeeds, a latency above 0, the
// request's, moves this process's unit delay halfway to it.
//
// LeavingN returns ErrBadCost if n is below 1 or above 2^53. The bound is
// not max+burst, which SetMax and SetBurst may change while requests are in
// flight. LeavingN returns ErrNotFound if key holds no state. A leased Conn
// returns ErrNotFound if it holds fewer than n live slots of key. It then
// gives back the slots it holds. LeavingN also returns ErrAbused,
// ErrBadState and the dictionary's errors.
func (c *Conn) LeavingN(ctx context.Context, key string, n int64, latency time.Duration) (int64, error) {
	if err := checkUncommit(n, maxExact); err != nil {
		return 0, err
	}
	return c.leaving(key, n, latency)
}

// leaving is LeavingN of a checked cost.
func (c *Conn) leaving(key string, cost int64, latency time.Duration) (int64, error) {
	n, err := c.leave(key, cost)
	if err != nil {
		return n, err
	}
	if latency > 0 {
		for {
			// floor((old+lat)/2) without the sum, which overflows near
			// the longest Duration; both are at least 0.
			old, lat := c.unitDelay.Load(), int64(latency)
			if c.unitDelay.CompareAndSwap(old, old/2+lat/2+(old%2+lat%2)/2) {
				break
			}
		}
	}
	return n, nil
}

// Uncommit ends a counted request, as Leaving without a latency.
func (c *Conn) Uncommit(ctx context.Context, key string) error {
	_, err := c.leave(key, 1)
	return err
}

// UncommitN ends a counted request of cost n, as LeavingN without a
// latency.
//
// UncommitN returns the errors of LeavingN.
func (c *Conn) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, maxExact); err != nil {
		return err
	}
	_, err := c.leave(key, n)
	return err
}

// Reset deletes key's count, so every slot of key is free. Requests in
// flight are forgotten, and their LeavingN returns ErrNotFound. A leased
// Conn's Reset deletes every holder's record of key, in every process.
//
// Reset returns the dictionary's errors.
func (c *Conn) Reset(ctx context.Context, key string) error {
	var kb keyBuf
	if err := resetKey(c.d, c.key(&kb, key)); err != nil {
		return err
	}
	if ls := c.lease; ls != nil {
		ls.mu.Lock()
		delete(ls.held, key)
		ls.mu.Unlock()
	}
	return nil
}

// UnitDelay returns this process's current unit delay.
func (c *Conn) UnitDelay() time.Duration { return time.Duration(c.unitDelay.Load()) }

func (c *Conn) leave(key string, cost int64) (int64, error) {
	if c.lease != nil {
		return c.lease.leave(c, c.d.Now(), key, cost)
	}
	var kb keyBuf
	zk := c.key(&kb, key)
	n, err := c.d.Incr(zk, -cost)
	if err != nil {
		if errors.Is(err, dict.ErrNotFound) {
			return 0, fmt.Errorf("limiter: leaving %q: %w", strings.Clone(zk), ErrNotFound)
		}
		return 0, incrErr(c.d, zk, err)
	}
	if n != 0 { // the last request of a key leaves 0: a count, read no more
		if err := checkCountInt(c.d, zk, n, -cost); err != nil {
			return 0, err
		}
	}
	return n, nil
}
