package dict

import (
	"math"
	"runtime"
	"time"

	"github.com/shmzone/shmzone/shm"
)

// TTL returns the time key has left, in whole milliseconds. 0 means it never
// expires. An expiry further ahead than a Duration reaches reads as the
// longest Duration of whole milliseconds.
//
// TTL returns ErrNotFound if key is absent or expired.
func (d *Dict) TTL(key string) (_ time.Duration, err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	if err := d.check(key, false); err != nil {
		return 0, err
	}
	h := hashKey(d.seed, key)
	s := d.shardFor(h)
	for try := 0; try < tries; try++ {
		// The expiry is in the entry's Ver word: one load, validated
		// against Seq, tells it.
		off, seq, ok := s.findOptimistic(key, h)
		if ok && off == 0 {
			return 0, ErrNotFound
		}
		if ok {
			w := s.entryAt(off).ver()
			if !writing(w) && s.seq() == seq {
				return ttlLeft(expiryOf(w), d.Now())
			}
		}
		runtime.Gosched()
	}
	s, _, off, err := d.lookup(key, false)
	if err != nil {
		return 0, err
	}
	defer d.unlock(s)
	if off == 0 {
		return 0, ErrNotFound
	}
	return ttlLeft(s.entryAt(off).expiry(), d.Now())
}

// ttlLeft returns what is left of a TTL that ends at expiry (0: none), or
// ErrNotFound once it has ended.
func ttlLeft(expiry, now int64) (time.Duration, error) {
	if expiry == 0 {
		return 0, nil
	}
	left := expiry - now
	if left <= 0 {
		return 0, ErrNotFound
	}
	return msDuration(left), nil
}

// maxTTLMs is the longest TTL a time.Duration holds in whole milliseconds,
// with a millisecond to spare for rounding up.
const maxTTLMs = int64((math.MaxInt64 - time.Millisecond) / time.Millisecond)

// msDuration converts a positive count of milliseconds to a Duration,
// capped at maxTTLMs instead of wrapping negative (an expiry up to
// maxExpiry, year 2527, is further away than a Duration reaches).
func msDuration(ms int64) time.Duration {
	return time.Duration(min(ms, maxTTLMs)) * time.Millisecond
}
