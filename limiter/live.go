package limiter

import (
	"time"
)

// Live numbers. A setter stores its numbers in the zone's registry, for
// every process of the zone. Live numbers win over every construction
// until UnsetLive drops them. The next decision of each process uses them.
// A setter checks the numbers in force with the new one, and refuses what
// the limiter's constructor refuses. It returns the dictionary's
// ErrReadOnly for a read-only view, and an error wrapping
// shm.ErrRegistryFull when the zone holds live numbers for as many
// limiters as it has room for.

// SetRate sets the rate live, in requests per second, as the Lua module's
// set_rate. The bucket keeps its excess, which drains at the new rate from
// the next decision on. A lower rate scans the zone once, to give each
// key's state the longer TTL it drains in.
//
// SetRate returns ErrBadRate for a rate NewReq refuses.
func (l *Req) SetRate(rate float64) error {
	return l.tune.set(live{set: liveRate, rate: rate})
}

// SetBurst sets the burst live, as the Lua module's set_burst. The next
// decision of each key compares its excess with the new burst.
//
// SetBurst returns ErrBadBurst for a burst NewReq refuses.
func (l *Req) SetBurst(burst float64) error {
	return l.tune.set(live{set: liveBurst, burst: burst})
}

// UnsetLive drops the live numbers. The newest construction's apply from
// the next decision on.
func (l *Req) UnsetLive() error { return l.tune.unset() }

// SetLimit sets the limit live. A window open at the change keeps what it
// counted, and the new limit applies to it at once: raised, the next
// request is admitted; lowered, requests are rejected once the window has
// counted the new limit.
//
// SetLimit returns ErrBadLimit for a limit NewCount refuses.
func (l *Count) SetLimit(limit int64) error {
	return l.tune.set(live{set: liveLimit, limit: limit})
}

// SetWindow sets the window live. A window open at the change keeps its
// end; the windows opened after it last the new window.
//
// SetWindow returns ErrBadWindow for a window NewCount refuses.
func (l *Count) SetWindow(window time.Duration) error {
	return l.tune.set(live{set: liveWindow, win: int64(window)})
}

// UnsetLive drops the live numbers. The newest construction's apply from
// the next decision on.
func (l *Count) UnsetLive() error { return l.tune.unset() }

// SetLimit sets the limit live. The counts of the current and the
// previous window stay, and the next decision weighs them against the new
// limit.
//
// SetLimit returns ErrBadLimit or ErrBadWindow for a limit
// NewSlidingWindow refuses with the window in force.
func (l *SlidingWindow) SetLimit(limit int64) error {
	return l.tune.set(live{set: liveLimit, limit: limit})
}

// UnsetLive drops the live numbers. The newest construction's apply from
// the next decision on.
func (l *SlidingWindow) UnsetLive() error { return l.tune.unset() }

// SetRate sets the rate live, in requests per second. A key keeps its
// TAT, and the next decision moves it by the new interval.
//
// SetRate returns ErrBadRate or ErrBadBurst for a rate NewGCRA refuses
// with the burst in force.
func (l *GCRA) SetRate(rate float64) error {
	return l.tune.set(live{set: liveRate, rate: rate})
}

// SetBurst sets the burst live. The next decision of each key allows the
// new burst.
//
// SetBurst returns ErrBadBurst for a burst NewGCRA refuses.
func (l *GCRA) SetBurst(burst int64) error {
	return l.tune.set(live{set: liveBurst, burst: float64(burst)})
}

// UnsetLive drops the live numbers. The newest construction's apply from
// the next decision on.
func (l *GCRA) UnsetLive() error { return l.tune.unset() }

// SetMax sets max live, as the Lua module's set_conn. Requests in flight
// stay counted, and the next decision compares them with the new max.
//
// SetMax returns ErrBadLimit if max is below 1.
func (c *Conn) SetMax(max int64) error {
	return c.tune.set(live{set: liveLimit, limit: max})
}

// SetConn is SetMax, under the Lua module's name.
func (c *Conn) SetConn(max int64) error { return c.SetMax(max) }

// SetBurst sets burst live, as the Lua module's set_burst.
//
// SetBurst returns ErrBadBurst if burst is negative.
func (c *Conn) SetBurst(burst int64) error {
	return c.tune.set(live{set: liveBurst, burst: float64(burst)})
}

// UnsetLive drops the live numbers. The newest construction's apply from
// the next decision on.
func (c *Conn) UnsetLive() error { return c.tune.unset() }
