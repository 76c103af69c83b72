package redistier

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// takeLease takes the host's flusher lease or renews it when this instance
// holds it, and reports whether it holds it. It records when the lease
// ends by the zone's clock (at the earliest), and forgets the list the
// last flush saw when it takes a lease that had lapsed.
func (l *Tiered) takeLease() (bool, error) {
	k, lease := l.zp+"lease", time.Duration(l.lease)*time.Millisecond
	at := l.d.Now()
	_, err := l.d.Add(k, dict.Int(l.id), lease, 0)
	if err == nil {
		// Another instance may have flushed since this one last did,
		// and popped the list it saw.
		l.seen = listSeen{}
	}
	if errors.Is(err, dict.ErrExists) {
		var mine bool
		mine, err = l.d.CompareAndSwap(k, dict.Int(l.id), dict.Int(l.id), lease)
		if errors.Is(err, dict.ErrNotFound) { // expired meanwhile
			return l.takeLease()
		}
		if err == nil && !mine {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	}
	l.leaseEnd = at + l.lease
	return true, nil
}

// renewLease extends the lease this instance has held without a break
// since its last renewal, and reports whether it did: false when the lease
// expired meanwhile (another process may have flushed since) or another
// instance holds it.
func (l *Tiered) renewLease() (bool, error) {
	k, lease := l.zp+"lease", time.Duration(l.lease)*time.Millisecond
	at := l.d.Now()
	mine, err := l.d.CompareAndSwap(k, dict.Int(l.id), dict.Int(l.id), lease)
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	case mine:
		l.leaseEnd = at + l.lease
	}
	return mine, nil
}

// fencedSet stores v under k, with ttl, unless this instance's lease has
// ended by the zone's clock when the shard is locked; it reports whether it
// stored it.
func (l *Tiered) fencedSet(k string, v dict.Value, ttl time.Duration) (bool, error) {
	held := true
	err := l.d.Update(k, func(dict.Value, bool) (dict.Value, time.Duration, bool) {
		if l.d.Now() >= l.leaseEnd {
			held = false
			return dict.Value{}, 0, true
		}
		return v, ttl, true
	})
	return held && err == nil, err
}

// hostID returns the host's id in Redis, drawn at random by the first
// flusher of the zone and kept there.
func (l *Tiered) hostID() (string, error) {
	k := l.zp + "host"
	var b [8]byte
	rand.Read(b[:])
	if _, err := l.d.Add(k, dict.Int(int64(binary.LittleEndian.Uint64(b[:])>>1)), 0, 0); err != nil && !errors.Is(err, dict.ErrExists) {
		return "", fmt.Errorf("redistier: tiered host id: %w", err)
	}
	id, err := l.intAt(k)
	return strconv.FormatInt(id, 10), err
}
