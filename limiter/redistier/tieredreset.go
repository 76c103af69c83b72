package redistier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
)

// A reset reaches every host through the key's hash in Redis. Reset
// replaces the window's hash by a marker, a number above every marker the
// hash held. Each host keeps, per key and window, the marker it knows
// ("…|r"), and sends it with its count. The flush script writes a count
// only when the marker sent is at least the hash's; otherwise it returns
// the hash's marker. The host then records it and drops from its count
// what that flush sent: what it counted before it learned of the reset.
// Its next flush sends only what it counted since.
//
// A marker is the server's TIME in ms, or one more than the hash's marker
// when that is larger. A host that lists a key, at the key's first request
// of a window, stamps it with the server's time of the host's last
// answered round trip, less 1 ms. A reset with a marker up to that stamp
// ran before that round trip, so before the key's first request: the
// host's count of the key is all after the reset, and Redis takes it.

// tieredResetScript replaces a key's hash of one window by a reset marker:
// the field "reset" holding the server's TIME in ms, or one more than the
// valid marker the hash held, whichever is larger. It keeps the hash's
// TTL, or sets ttl_ms on a new key or one without a TTL. Whatever the key
// held, a hash, a bad state or nothing, it holds the marker alone
// afterwards. KEYS: prefix:key:window; ARGV: ttl_ms. Reply: {marker}.
var tieredResetScript = redis.NewScript(`
local k = KEYS[1]
local t = redis.call('TIME')
local r = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pttl = redis.call('PTTL', k)
if redis.call('TYPE', k).ok == 'hash' then
  local old = redis.call('HGET', k, 'reset')
  local v = old and tonumber(old)
  if v and v % 1 == 0 and v >= r and v < 2^53 and string.format('%d', v) == old then r = v + 1 end
end
redis.call('DEL', k)
redis.call('HSET', k, 'reset', string.format('%d', r))
if pttl > 0 then redis.call('PEXPIRE', k, pttl) else redis.call('PEXPIRE', k, ARGV[1]) end
return {r}
`)

// Reset forgets key's count of the current window on every host. In
// Redis, it replaces the window's hash by a reset marker, so the global
// count is 0. It replaces whatever the key holds, a bad state included.
// In this host's zone, it deletes the host's count and the other hosts'
// count last read, and records the marker.
//
// Every other host learns of the reset at its next flush of the key,
// within an interval. Redis refuses the count it sends, and the host drops
// that count from its zone. Afterwards each host counts only what it
// decided after its flush read its count. The global count is their sum.
// Some requests are lost around a reset:
//
//   - On another host, those it decided from the reset to its next flush's
//     read of its count. That is at most an interval and a round trip.
//   - On a host whose first request of the key comes after the reset, the
//     same, if its last flush ran before the reset.
//   - On this host, those decided during the Reset itself.
//
// Requests decided after those points count as on a fresh key. A Redis
// that restarts empty forgets its markers. A host that has not learned of
// the reset then flushes its whole count again.
//
// If Redis does not answer, Reset resets this host's zone alone. The other
// hosts' counts come back at their next flushes. Under FailLocal, Reset
// resets key in Options.Local too.
//
// A host of a release before reset markers takes a reset key for a bad
// state until its hash expires. Upgrade every host before any calls Reset.
//
// Reset returns ErrBadKey for an empty key. It returns ErrUnavailable if
// Redis does not answer, and resets the zone all the same. It returns
// ErrScript for an error reply, and ErrBadState for a reply that no reset
// script returns. It also returns the dictionary's errors, and
// Options.Local's.
func (l *Tiered) Reset(ctx context.Context, key string) error {
	if key == "" {
		return ErrBadKey
	}
	win := l.o.Now().UnixMilli() / l.window
	ttl := time.Duration(2*l.window) * time.Millisecond
	rep, err := l.runN(ctx, 1, tieredResetScript, key+":"+strconv.FormatInt(win, 10), 2*l.window)
	if err == nil {
		if _, _, rerr := l.raise(l.zkey(win, key, "|r"), rep[0], ttl, false); rerr != nil {
			err = fmt.Errorf("redistier: tiered %s: %w", key, rerr)
		}
	}
	ok := l.zkey(win, key, "|c|o")
	for _, k := range []string{ok[:len(ok)-2], ok} {
		if derr := l.d.Delete(k); derr != nil {
			err = errors.Join(err, fmt.Errorf("redistier: tiered %s: %w", key, derr))
		}
	}
	if l.o.OnFailure == FailLocal {
		err = errors.Join(err, l.o.Local.Reset(ctx, key))
	}
	return err
}

// raise stores the reset marker r under k, with ttl, unless k holds r or
// a later marker, and reports whether it stored it. Fenced, it stores
// nothing once this instance's lease has ended by the zone's clock (see
// fencedSet), and reports held false.
func (l *Tiered) raise(k string, r int64, ttl time.Duration, fenced bool) (held, raised bool, err error) {
	err = l.d.Update(k, func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
		held, raised = true, false
		switch {
		case fenced && l.d.Now() >= l.leaseEnd:
			held = false
			return dict.Value{}, 0, true
		case ok && cur.Kind() == dict.KindInt && cur.Int() >= r:
			return dict.Value{}, 0, true
		}
		raised = true
		return dict.Int(r), ttl, true
	})
	return held && err == nil, raised && err == nil, err
}

// learn records the marker r, which the flush of it read, for its key,
// unless the host knows it or a later one. When it records it, Redis
// refused the count it sent (it.n, counted before the host learned of the
// reset), and learn drops that count from the host's zone. It reports
// whether this instance still holds the lease (see fencedSet).
func (l *Tiered) learn(it flushItem, r int64) (bool, error) {
	if r <= it.mark {
		return true, nil
	}
	ttl := time.Duration(2*l.window) * time.Millisecond
	held, raised, err := l.raise(it.others[:len(it.others)-4]+"|r", r, ttl, true)
	if err != nil || !raised {
		return held, err
	}
	if err := l.take(it.others[:len(it.others)-2], it.n); err != nil {
		return false, err
	}
	return true, nil
}

// noteTime records the server's time of a round trip's script runs, the
// earliest of replies' (each run's last value), for stamp; the latest of
// those recorded stays. It records nothing once this instance's lease
// has ended.
func (l *Tiered) noteTime(replies [][]int64) error {
	var t int64
	for _, rep := range replies {
		if len(rep) > 0 && (t == 0 || rep[len(rep)-1] < t) {
			t = rep[len(rep)-1]
		}
	}
	if t <= 0 {
		return nil
	}
	err := l.d.Update(l.zp+"t", func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
		if l.d.Now() >= l.leaseEnd || ok && cur.Kind() == dict.KindInt && cur.Int() >= t {
			return dict.Value{}, 0, true
		}
		return dict.Int(t), 0, true
	})
	if err != nil {
		return fmt.Errorf("redistier: tiered server time: %w", err)
	}
	return nil
}

// stamp records, as the reset marker of key's window known to the host,
// the server's time of the host's last answered round trip less 1 ms (see
// above): a reset up to it came before the key's first request. A zone
// too full to hold it leaves the key without one; its first flush after a
// reset then learns of it as a host that counted before it.
func (l *Tiered) stamp(win int64, key string, ttl time.Duration) error {
	t, err := l.intAt(l.zp + "t")
	if err != nil || t <= 1 {
		return err
	}
	_, _, err = l.raise(l.zkey(win, key, "|r"), t-1, ttl, false)
	if err != nil && !errors.Is(err, dict.ErrNoMemory) {
		return fmt.Errorf("redistier: tiered %s: %w", key, err)
	}
	return nil
}
