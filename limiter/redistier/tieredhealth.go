package redistier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
)

// probe is a flush with nothing to send: it asks Redis nothing while the
// host considers Redis healthy, and a PING while it considers it failed,
// whose answer is judged as a round trip's, so that a host with no key
// counted (its decisions go by the policy) learns that Redis is back.
func (l *Tiered) probe(ctx context.Context) error {
	if h, err := l.intAt(l.hk); err != nil || h >= 0 {
		return err
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	if err := l.c.Ping(pctx).Err(); err != nil {
		err = fmt.Errorf("%w: tiered %s: %w", ErrUnavailable, l.prefix, err)
		if ctx.Err() == nil && l.judge(start, err) {
			err = errors.Join(err, l.mark(false))
		}
		return err
	}
	l.fails = 0
	if held, err := l.renewLease(); !held || err != nil {
		return err
	}
	return l.mark(true)
}

// judge records that a round trip sent at start failed with err and
// reports whether Redis is now failed for the host: the round trips of two
// flushes in a row failed, and, when the last timed out (which a process
// too busy to read an answer in time can cause as well), the first of them
// was sent at least the stale time (5 intervals plus the timeout) ago.
func (l *Tiered) judge(start time.Time, err error) bool {
	if l.fails == 0 {
		l.failSince = start
	}
	l.fails++
	return l.fails >= 2 && (!timedOut(err) || time.Since(l.failSince) >= time.Duration(l.stale)*time.Millisecond)
}

// mark stores Redis's health for the host while this instance holds the
// lease: good, the time of the answer just read (the latest kept);
// failed, the last good time negated (-1 when none).
func (l *Tiered) mark(good bool) error {
	now := l.o.Now().UnixMilli()
	err := l.d.Update(l.hk, func(cur dict.Value, _ bool) (dict.Value, time.Duration, bool) {
		if l.d.Now() >= l.leaseEnd {
			return dict.Value{}, 0, true
		}
		var last int64
		if cur.Kind() == dict.KindInt {
			last = max(cur.Int(), -cur.Int())
		}
		if good {
			return dict.Int(max(last, now)), 0, true
		}
		return dict.Int(-max(last, 1)), 0, true
	})
	if err != nil {
		return fmt.Errorf("redistier: tiered health: %w", err)
	}
	return nil
}

// timedOut reports whether err says that an answer did not come in time,
// which the flusher's own scheduling can cause, rather than that Redis
// refused or dropped the connection or answered with an error.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &ne) && ne.Timeout())
}

// health returns nil while the host considers Redis reachable, an error
// wrapping ErrUnavailable when it considers it failed (see Tiered), or the
// dictionary's.
func (l *Tiered) health(now int64) error {
	ok, err := l.intAt(l.hk)
	switch {
	case err != nil:
		return err
	case ok < 0:
		return fmt.Errorf("%w: tiered %s: flushes failed", ErrUnavailable, l.prefix)
	case ok > 0 && now-ok > l.stale:
		if live, err := l.flusherLive(now); live || err != nil {
			return err
		}
		return fmt.Errorf("%w: tiered %s: no answer to a flush for %d ms, and no flusher", ErrUnavailable, l.prefix, now-ok)
	}
	return nil
}

// flusherLive reports whether a flush will come: Run runs in this
// instance, or its Flush was called in the stale time, or some process of
// the host holds the flusher lease.
func (l *Tiered) flusherLive(now int64) (bool, error) {
	if l.runs.Load() > 0 || now-l.called.Load() <= l.stale {
		return true, nil
	}
	_, _, err := l.d.Get(l.zp + "lease")
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	}
	return true, nil
}
