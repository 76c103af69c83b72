package redistier

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// Live numbers. A setter stores its numbers in the limiter's live hash in
// Redis, for every host that uses the same Redis and prefix. Live numbers
// win over every construction until UnsetLive deletes the hash. The next
// decision of each limiter uses them, or within Options.LiveEvery on a
// cluster client with a prefix without hash tag. A setter checks the
// numbers in force with the new one, and refuses what the limiter's
// constructor refuses. It checks them with this limiter's built numbers.
//
// The setters take a context, unlike package limiter's, since they call
// Redis. Each returns ErrUnavailable if Redis does not answer within
// Options.Timeout, and ErrBadLive if the hash holds numbers the limiter
// refuses already. UnsetLive then clears it.

const maxTauLive = 100 * 365 * 24 * 3600 * 1e6 // µs: NewGCRA's bound on T·burst

var reqLive = &liveKind{
	name:   "req",
	fields: []string{"rate", "burst"},
	nums: `
local function liveNums(v, d, tag)
  return {liveNum(tag, 'rate', v[1], d[1], 1, 9007199254740992, true),
    liveNum(tag, 'burst', v[2], d[2], 0, 999999999999999.875, false)}
end
`,
	numbers: func(x []float64) limiter.Numbers {
		return limiter.Numbers{Rate: x[0] / 1000, Burst: x[1] / 1000}
	},
}

var countLive = &liveKind{
	name:   "count",
	fields: []string{"limit", "window"},
	nums: `
local function liveNums(v, d, tag)
  local limit = liveNum(tag, 'limit', v[1], d[1], 1, 9007199254740992, true)
  return {limit, liveNum(tag, 'window', v[2], d[2], 1, 9007199254740992, true)}
end
`,
	numbers: func(x []float64) limiter.Numbers {
		return limiter.Numbers{Limit: int64(x[0]), Window: time.Duration(x[1]) * time.Millisecond}
	},
}

var swLive = &liveKind{
	name:   "sliding",
	fields: []string{"limit"},
	nums: `
local function liveNums(v, d, tag)
  local limit = liveNum(tag, 'limit', v[1], d[1], 1, 9007199254740992, true)
  if limit * d[2] > 9007199254740992 then
    liveErr(tag, 'window', string.format('a limit of %d times a window of %d ms passes 2^53', limit, d[2]))
  end
  return {limit, d[2]}
end
`,
	numbers: func(x []float64) limiter.Numbers {
		return limiter.Numbers{Limit: int64(x[0]), Window: time.Duration(x[1]) * time.Millisecond}
	},
}

var gcraLive = &liveKind{
	name:   "gcra",
	fields: []string{"interval", "burst"},
	nums: fmt.Sprintf(`
local function liveNums(v, d, tag)
  local T = liveNum(tag, 'interval', v[1], d[1], 1, %d, true)
  return {T, liveNum(tag, 'burst', v[2], d[2], 1, math.floor(%d / T), true)}
end
`, int64(maxTauLive/100), int64(maxTauLive)),
	numbers: func(x []float64) limiter.Numbers {
		return limiter.Numbers{Rate: 1e6 / x[0], Burst: x[1]}
	},
}

// SetRate sets the rate live, in requests per second, as the Lua module's
// set_rate. It is stored as NewReq stores it, in whole milli-requests per
// second. The bucket keeps its excess, which drains at the new rate from
// the next decision on.
//
// SetRate returns limiter.ErrBadRate for a rate below a milli-request per
// second, or above 2^53 of them.
func (l *Req) SetRate(ctx context.Context, rate float64) error {
	m := math.Floor(rate * 1000)
	if !(m >= 1 && m <= maxExactF) {
		return fmt.Errorf("%w: %v requests per second", limiter.ErrBadRate, rate)
	}
	_, s := luaArg(m)
	return l.setLive(ctx, s, "")
}

// SetBurst sets the burst live, as the Lua module's set_burst. The next
// decision of each key compares its excess with the new burst.
//
// SetBurst returns limiter.ErrBadBurst for a burst NewReq refuses.
func (l *Req) SetBurst(ctx context.Context, burst float64) error {
	if !(burst >= 0 && burst < 1e12) {
		return fmt.Errorf("%w: %v", limiter.ErrBadBurst, burst)
	}
	_, s := luaArg(burst * 1000)
	return l.setLive(ctx, "", s)
}

// UnsetLive deletes the live numbers. Each limiter's built numbers apply
// from its next decision on.
func (l *Req) UnsetLive(ctx context.Context) error { return l.unsetLive(ctx) }

// Setting returns the limiter's numbers. It returns ErrBadLive for a live
// hash the limiter refuses.
func (l *Req) Setting(ctx context.Context) (Setting, error) { return l.setting(ctx) }

// SetLimit sets the limit live. A window open at the change keeps what it
// counted, and the new limit applies to it at once. Raised, the next
// request is admitted. Lowered, requests are rejected once the window has
// counted the new limit.
//
// SetLimit returns limiter.ErrBadLimit for a limit below 1 or above 2^53.
func (l *Count) SetLimit(ctx context.Context, limit int64) error {
	if err := checkInt(limit, limiter.ErrBadLimit); err != nil {
		return err
	}
	return l.setLive(ctx, strconv.FormatInt(limit, 10), "")
}

// SetWindow sets the window live, in whole milliseconds. A window open at
// the change keeps its end. The windows opened after it last the new
// window.
//
// SetWindow returns limiter.ErrBadWindow for a window below 1 ms.
func (l *Count) SetWindow(ctx context.Context, window time.Duration) error {
	if err := checkInt(window.Milliseconds(), limiter.ErrBadWindow); err != nil {
		return err
	}
	return l.setLive(ctx, "", strconv.FormatInt(window.Milliseconds(), 10))
}

// UnsetLive deletes the live numbers. Each limiter's built numbers apply
// from its next decision on.
func (l *Count) UnsetLive(ctx context.Context) error { return l.unsetLive(ctx) }

// Setting returns the limiter's numbers. It returns ErrBadLive for a live
// hash the limiter refuses.
func (l *Count) Setting(ctx context.Context) (Setting, error) { return l.setting(ctx) }

// SetLimit sets the limit live. The counts of the current and the
// previous window stay, and the next decision weighs them against the new
// limit. The window has no setter: a key's window number means nothing
// under another window length.
//
// SetLimit returns limiter.ErrBadLimit for a limit below 1, and
// limiter.ErrBadWindow when limit times the window in ms passes 2^53.
func (l *SlidingWindow) SetLimit(ctx context.Context, limit int64) error {
	if err := checkInt(limit, limiter.ErrBadLimit); err != nil {
		return err
	}
	return l.setLive(ctx, strconv.FormatInt(limit, 10))
}

// UnsetLive deletes the live numbers. Each limiter's built numbers apply
// from its next decision on.
func (l *SlidingWindow) UnsetLive(ctx context.Context) error { return l.unsetLive(ctx) }

// Setting returns the limiter's numbers. It returns ErrBadLive for a live
// hash the limiter refuses.
func (l *SlidingWindow) Setting(ctx context.Context) (Setting, error) { return l.setting(ctx) }

// SetRate sets the rate live, in requests per second. A key keeps its
// TAT, and the next decision moves it by the new interval, rounded to the
// nearest microsecond.
//
// SetRate returns limiter.ErrBadRate for a rate NewGCRA refuses, and
// limiter.ErrBadBurst when the burst in force is too large for it.
func (l *GCRA) SetRate(ctx context.Context, rate float64) error {
	t := math.Round(1e6 / rate)
	if !(t >= 1 && t <= maxTauLive/100) {
		return fmt.Errorf("%w: %v requests per second", limiter.ErrBadRate, rate)
	}
	return l.setLive(ctx, strconv.FormatInt(int64(t), 10), "")
}

// SetBurst sets the burst live. The next decision of each key allows the
// new burst.
//
// SetBurst returns limiter.ErrBadBurst for a burst NewGCRA refuses with
// the rate in force.
func (l *GCRA) SetBurst(ctx context.Context, burst int64) error {
	if burst < 1 {
		return fmt.Errorf("%w: %d", limiter.ErrBadBurst, burst)
	}
	return l.setLive(ctx, "", strconv.FormatInt(burst, 10))
}

// UnsetLive deletes the live numbers. Each limiter's built numbers apply
// from its next decision on.
func (l *GCRA) UnsetLive(ctx context.Context) error { return l.unsetLive(ctx) }

// Setting returns the limiter's numbers. It returns ErrBadLive for a live
// hash the limiter refuses.
func (l *GCRA) Setting(ctx context.Context) (Setting, error) { return l.setting(ctx) }
