package redistier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// Tiered is a global limit of limit requests per fixed window across
// hosts, at a fraction of a Redis limiter's Redis traffic. Decisions never
// wait for Redis. The processes of a host count in the host's zone, one
// dict that they share. One process per host at a time holds a lease in
// the zone. Every interval, it flushes the host's count of each key to
// Redis, and reads back the global count. The zero value is not usable:
// create a Tiered with NewTiered.
//
// A host admits a request if the other hosts' counts it last read, plus
// its own count, stay within limit. So it never rejects below the global
// limit it knows of. It does not see the other hosts' requests of the last
// interval or two. So in a window, the hosts together admit at most
//
//	limit + 2 · hosts · rate · interval
//
// Here rate is the most requests per second that one host admits. interval
// is the time between a host's flushes: the interval, or a flush's time if
// that is longer. With flushes spread over the interval, the overshoot is
// about hosts · rate · interval.
//
// Redis load per host and interval does not depend on the request rate. A
// flush makes a script run per 256 keys, or per hash slot on a Cluster. It
// makes a round trip per 1,024 keys. At a window's end it sends as much
// again, for the previous window's last counts. A flush writes the host's
// whole count of the window, with a sequence number. So a round trip that
// ran late, or a server that restarted empty, leaves the global count
// wrong at most until the next flush. Reset forgets a key's count on every
// host, each at its next flush.
//
// Decisions never call Redis, so each returns in the time of a few zone
// operations, whatever Redis does. The host judges Redis by its answers to
// the flushes, not by how late a flush is. It considers Redis failed once
// the round trips of two flushes in a row have failed. If the second timed
// out, the first must also have been sent at least 5 intervals plus the
// timeout earlier. Each answer is stamped in the zone by the windows'
// clock.
//
// A flush late because its process is busy is no failure. It still
// happens, and its instance's decisions yield to it while it runs. No
// answer is a failure only when no flush is coming. That is so when no
// flush was answered for 5 intervals plus the timeout, and the flusher
// lease has lapsed. This instance must also neither run Run nor have
// called Flush in that time. Nor must it have been made in that time: a
// new instance has yet to make its first flush. The lease passes on after
// 3 intervals plus the timeout. A flush with nothing to send asks a
// healthy Redis nothing. It sends a failed one a PING, whose answer counts
// as a round trip's.
//
// Until Redis is failed, the host decides on its last global count. While
// it is failed, Incoming decides by Options.OnFailure, as the other
// limiters do. FailError returns ErrUnavailable with a rejecting zero
// Decision. FailOpen allows, counting nothing. FailClosed rejects, with
// RetryAfter set to the timeout. FailLocal returns Options.Local's
// decision. Stats counts every fallback. Its Calls and Errors count this
// instance's flushes' script runs. Processes keep flushing the counts the
// host had. The first answered round trip returns the host to normal.
// Requests that FailOpen or FailLocal admitted meanwhile are not in the
// global count. A host that has not flushed yet is not failed.
//
// A window's keys are listed in one list of the zone. So one shard of the
// zone must hold a list element per active key, besides its share of the
// counts. An element takes 40 bytes for a client address. A list never
// evicts. If its shard is full, a new key is left out of the window's list
// and counted in Stats.Unlisted. Its decisions in the window stand on the
// host's count, which no flush carries. Its first request of a later
// window lists it again.
//
// The list, a key's count and the mark that says it is listed are entries
// of the zone like any other. A zone that must make room for other keys
// evicts them, the least used first. If a window's list is evicted, the
// flusher finds the loss at its next flush. It scans the zone for the
// window's counts, and flushes and lists again the keys missing from the
// list. Stats.Relisted counts them. Such a key is out of the global count
// from the eviction to that flush. A count evicted starts again from zero.
// limiter/DESIGN.md, section 10, says what else an eviction can lose.
//
// So give a Tiered a zone, or a share of one, that does not evict: one
// whose dict.Stats.Evictions stays 0. A zone that other users flood with
// keys costs scans. It can also cost the global count some of the host's
// share of a window.
type Tiered struct {
	base
	d                *dict.Dict
	limit            int64
	window, interval int64  // ms
	id               int64  // this instance's lease id, unique on the host
	zp               string // zone key prefix "tier|prefix|"
	hk               string // zone key of the host's Redis health, zp+"ok"
	lease            int64  // ms a flusher's lease lasts: 3 intervals plus the timeout
	stale            int64  // ms: 5 intervals plus the timeout
	flushes          atomic.Uint64
	wp               atomic.Pointer[winPrefix] // the current window's key prefix
	flushing         atomic.Bool               // a Flush of this instance is running
	runs             atomic.Int32              // Run loops of this instance
	called           atomic.Int64              // when Flush was last called, or the instance made, ms by the windows' clock
	unlisted         atomic.Uint64             // Stats.Unlisted
	relisted         atomic.Uint64             // Stats.Relisted

	fmu       sync.Mutex // one Flush at a time; guards the fields below
	leaseEnd  int64      // zone ms when the lease this instance holds ends, at the earliest
	fails     int        // flushes in a row whose round trip failed
	failSince time.Time  // when the first of them sent it
	seen      listSeen   // the current window's list as the last flush saw it (tieredlost.go)
}

// winPrefix is a window's zone key prefix "tier|prefix|win|", kept so that
// a decision builds its keys with one allocation.
type winPrefix struct {
	win int64
	s   string
}

var tieredSeq atomic.Int64

// NewTiered returns a tiered limiter of limit requests per window, across
// every host that uses the same Redis and prefix. Each host counts in d.
// Every process of a host calls Flush every interval, as Run does.
// Otherwise the host never learns the global count. window and interval
// are in whole milliseconds.
//
// Options.Timeout bounds each round trip of a flush. Options.Now is the
// clock of the windows. The hosts' clocks should agree to well within a
// window. OnFailure and Local apply while Redis is failed, as Tiered says.
// Options.Clock is not used.
//
// The host's zone keys are "tier|prefix|…", a namespace of their own
// beside the local limiters'. So prefix must be a limiter name, as
// limiter.CheckName checks.
//
// NewTiered returns limiter.ErrNilDict for a nil d, and ErrNilClient,
// ErrNoContextTimeout or ErrNoLocal for a client or Options it cannot use.
// It returns limiter.ErrBadName for a prefix that is not a limiter name,
// and limiter.ErrBadLimit for a limit below 1. It returns
// limiter.ErrBadWindow for an interval below 1 ms or longer than the
// window.
func NewTiered(d *dict.Dict, c redis.UniversalClient, prefix string, limit int64, window, interval time.Duration, o Options) (*Tiered, error) {
	if d == nil {
		return nil, limiter.ErrNilDict
	}
	if err := limiter.CheckName(prefix); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: %d", limiter.ErrBadLimit, limit)
	}
	if interval < time.Millisecond || window < interval {
		return nil, fmt.Errorf("%w: window %v, interval %v", limiter.ErrBadWindow, window, interval)
	}
	o.Clock = CallerClock
	l := &Tiered{
		d: d, limit: limit, window: window.Milliseconds(), interval: interval.Milliseconds(),
		id: int64(os.Getpid())<<20 | tieredSeq.Add(1)&(1<<20-1),
		zp: "tier|" + prefix + "|",
	}
	l.hk = l.zp + "ok"
	if err := l.init(c, prefix, o, false); err != nil {
		return nil, err
	}
	l.lease = 3*l.interval + l.o.Timeout.Milliseconds()
	l.stale = 5*l.interval + l.o.Timeout.Milliseconds()
	// A process that replaces a dead flusher finds its last answer stale.
	// Its first flush is coming.
	l.called.Store(l.o.Now().UnixMilli())
	return l, nil
}

// Zone keys, per window: "tier|prefix|win|key|c" the host's count, "|c|o"
// the other hosts' count last read (named so that the count's key is a
// prefix of it), "|m" a marker that the key is listed in
// "tier|prefix|win|keys", "|r" the key's reset marker the host knows
// (tieredreset.go); all expire two windows on. Per host:
// "tier|prefix|host" the host's id in Redis, "|seq" the flush sequence
// (created as the windows' clock in µs, below 2^53, which the script
// allows, until the year 2255),
// "|lease" the flusher's lease, "|ok" Redis's health: the time in ms (by
// the windows' clock) of the last answer to a flush, negated while Redis is
// failed (-1 when it never answered), "|t" the server's time in ms of the
// last answered round trip.
func (l *Tiered) zkey(win int64, key, suffix string) string {
	p := l.wp.Load()
	if p == nil || p.win != win {
		p = &winPrefix{win, l.zp + strconv.FormatInt(win, 10) + "|"}
		l.wp.Store(p)
	}
	return p.s + key + suffix
}

// Incoming is IncomingN of one request.
func (l *Tiered) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.incoming(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n for key in the host's zone,
// without Redis. It adds n to the host's count, which the flushes carry to
// the global count. State and Remaining are the allowance left, as this
// host knows it. ResetAfter is the time to the window's end, and so is
// RetryAfter on a rejection. While Redis is failed, the failure policy
// decides, as Tiered says.
//
// A cost above limit is never admitted. IncomingN rejects it at once, with
// RetryAfter the longest Duration.
//
// IncomingN returns limiter.ErrBadCost if n is below 1, and ErrBadKey for
// an empty key. It returns ErrBadState while the key's Redis hash holds a
// state no Tiered writes, as the key's last flush found. It returns
// limiter.ErrAbused if a zone key of key holds a value of another kind. It
// returns ErrUnavailable under FailError while Redis is failed. It also
// returns the dictionary's errors, and Options.Local's under FailLocal.
func (l *Tiered) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if err := checkCost(n); err != nil {
		return limiter.Decision{}, err
	}
	return l.incoming(ctx, key, n, commit)
}

func (l *Tiered) incoming(ctx context.Context, key string, cost int64, commit bool) (limiter.Decision, error) {
	if key == "" {
		return limiter.Decision{}, ErrBadKey
	}
	if cost > l.limit {
		return tooCostly(), nil
	}
	if l.flushing.Load() {
		runtime.Gosched() // let the flush run (see Flush)
	}
	now := l.o.Now().UnixMilli()
	if err := l.health(now); err != nil {
		return l.fail(ctx, key, cost, commit, err)
	}
	win := now / l.window
	ttl := time.Duration(2*l.window) * time.Millisecond
	ok := l.zkey(win, key, "|c|o")
	g, err := l.intAt(ok)
	if err != nil {
		return limiter.Decision{}, err
	}
	dk := ok[:len(ok)-2] // "…|c"
	var n int64
	if commit {
		if n, _, err = l.d.IncrInit(dk, cost, 0, ttl); err != nil {
			return limiter.Decision{}, zoneErr(key, err)
		}
		if err := l.checkCount(dk, n); err != nil {
			return limiter.Decision{}, err
		}
		if n == cost { // the window's first request of the key: list it
			if err := l.list(win, key, ttl); err != nil {
				return limiter.Decision{}, err
			}
		}
	} else {
		if n, err = l.intAt(dk); err != nil {
			return limiter.Decision{}, err
		}
		n += cost
	}
	left := l.limit - g - n
	reset := ms((win+1)*l.window - now)
	d := limiter.Decision{State: float64(left), ResetAfter: reset}
	if left < 0 {
		if commit {
			if _, err := l.d.Incr(dk, -cost); err != nil {
				return limiter.Decision{}, fmt.Errorf("redistier: tiered %s: %w", key, err)
			}
		}
		d.RetryAfter = reset
		return d, nil
	}
	d.Allowed, d.Committed, d.Remaining = true, commit, left
	return d, nil
}

// list adds key to its window's list of keys to flush, once per window. A
// list that finds its shard full (a list never evicts) leaves the key out
// for the window: the decision stands on the host's count, and the key is
// counted in Stats.Unlisted.
func (l *Tiered) list(win int64, key string, ttl time.Duration) error {
	_, err := l.d.Add(l.zkey(win, key, "|m"), dict.Int(1), ttl, 0)
	if errors.Is(err, dict.ErrExists) {
		return nil
	}
	if errors.Is(err, dict.ErrNoMemory) {
		l.unlisted.Add(1)
		return nil
	}
	if err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	if err := l.stamp(win, key, ttl); err != nil {
		return err
	}
	lk := l.zkey(win, "keys", "")
	n, err := l.d.RPush(lk, dict.String(key))
	if errors.Is(err, dict.ErrNoMemory) {
		l.unlisted.Add(1)
		return nil
	}
	if err == nil && n == 1 {
		err = l.d.Expire(lk, ttl)
	}
	if err != nil {
		return fmt.Errorf("redistier: tiered key list: %w", err)
	}
	return nil
}

// Stats returns the instance's counts. Calls and Errors count its flushes'
// script runs. Fallbacks counts its fallbacks to the failure policy.
// Unlisted counts the keys left out of a window's list. Relisted counts the
// keys that its flushes listed again after an eviction.
func (l *Tiered) Stats() Stats {
	s := l.base.Stats()
	s.Unlisted = l.unlisted.Load()
	s.Relisted = l.relisted.Load()
	return s
}

// intAt reads an int of the zone, 0 when absent.
func (l *Tiered) intAt(k string) (int64, error) {
	v, _, err := l.d.Get(k)
	if errors.Is(err, dict.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, zoneErr(k, err)
	}
	if v.Kind() != dict.KindInt {
		return 0, zoneValueErr(k, v)
	}
	return v.Int(), nil
}

// Uncommit is UncommitN of one request.
func (l *Tiered) Uncommit(ctx context.Context, key string) error { return l.uncommit(ctx, key, 1) }

// UncommitN gives a request of cost n back to this host's count of key in
// the current window. The next flush carries it. The count does not drop
// below 0: a count below 0 is a bad state in Redis. While Redis is failed and
// the policy is FailLocal, UncommitN gives it back to Options.Local
// instead.
//
// UncommitN returns limiter.ErrBadCost if n is below 1 or above limit, and
// ErrBadKey for an empty key. It also returns the dictionary's errors, and
// Options.Local's.
func (l *Tiered) UncommitN(ctx context.Context, key string, n int64) error {
	if err := checkUncommit(n, l.limit); err != nil {
		return err
	}
	return l.uncommit(ctx, key, n)
}

func (l *Tiered) uncommit(ctx context.Context, key string, n int64) error {
	if key == "" {
		return ErrBadKey
	}
	now := l.o.Now().UnixMilli()
	if err := l.health(now); errors.Is(err, ErrUnavailable) && l.o.OnFailure == FailLocal {
		return l.failUncommit(ctx, key, n, err)
	}
	win := now / l.window
	if err := l.take(l.zkey(win, key, "|c"), n); err != nil {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
}

// take subtracts n from the host's count under k, down to 0. An absent
// count stays absent. take subtracts n, then adds back what went below 0,
// at most n. So a count may be below 0 for a moment. It may stay below 0
// by what a rejection took back meanwhile. A flush sends 0 for it.
func (l *Tiered) take(k string, n int64) error {
	v, err := l.d.Incr(k, -n)
	if errors.Is(err, dict.ErrNotFound) || err == nil && v >= 0 {
		return nil
	}
	if err == nil {
		_, err = l.d.Incr(k, min(n, -v))
	}
	if errors.Is(err, dict.ErrNotFound) {
		return nil
	}
	return err
}

// Run calls Flush every interval until ctx is done. It drops the errors of
// Flush. Stats counts the script runs that failed. Every process of a host
// runs it, and one of them flushes at a time. A flush that takes longer
// than the interval is followed by the next at once. While Run runs, the
// instance's decisions do not take a late flush for a failed Redis.
func (l *Tiered) Run(ctx context.Context) {
	l.runs.Add(1)
	defer l.runs.Add(-1)
	t := time.NewTicker(time.Duration(l.interval) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Flush(ctx)
		}
	}
}
