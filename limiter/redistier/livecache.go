package redistier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// atomicCache holds the live strings of a limiter whose script cannot read
// its live hash: on Redis Cluster, with a prefix without hash tag.
type atomicCache struct {
	p          atomic.Pointer[liveCache]
	refreshing atomic.Bool
}

// liveCache is the live hash as read at, on Options.Now, in ns.
type liveCache struct {
	at  int64
	v   []any // a string per field, "" where unset
	err error // ErrBadLive for a key that is not a hash
}

// drop makes the next decision read the hash again.
func (c *atomicCache) drop() { c.p.Store(nil) }

// cached returns the live strings, read again when older than
// Options.LiveEvery. One decision at a time reads them. The others use the
// strings read before, if any. A read that Redis does not answer keeps the
// strings read before: the script run after it fails the same way.
func (b *base) cached(ctx context.Context) ([]any, error) {
	c := &b.live.cache
	now := b.o.Now().UnixNano()
	cur := c.p.Load()
	if cur != nil && now >= cur.at && now-cur.at < int64(b.o.LiveEvery) {
		return cur.v, cur.err
	}
	if cur != nil && !c.refreshing.CompareAndSwap(false, true) {
		return cur.v, cur.err
	}
	defer c.refreshing.Store(false)
	next := &liveCache{at: now}
	v, err := b.readLive(ctx)
	switch {
	case err == nil:
		next.v = v
	case errors.Is(err, ErrBadLive):
		next.v, next.err = b.noLive(), err
	case cur != nil:
		next.v, next.err = cur.v, cur.err
	default:
		next.v = b.noLive()
	}
	c.p.Store(next)
	return next.v, next.err
}

// noLive is the live strings of a limiter with no live numbers.
func (b *base) noLive() []any {
	v := make([]any, len(b.live.kind.fields))
	for i := range v {
		v[i] = ""
	}
	return v
}

// readLive reads the live hash's fields within the timeout. A field that
// holds "" is sent as a string the script refuses, since "" means unset.
func (b *base) readLive(ctx context.Context) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	b.calls.Add(1)
	r, err := b.c.HMGet(ctx, b.live.lkey, b.live.kind.fields...).Result()
	if err != nil {
		b.errs.Add(1)
		var re redis.Error
		if errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE") {
			return nil, fmt.Errorf("%w: %s is not a hash: %w", ErrBadLive, b.live.lkey, err)
		}
		return nil, err
	}
	v := make([]any, len(r))
	for i, x := range r {
		switch s, ok := x.(string); {
		case x == nil:
			v[i] = ""
		case !ok || s == "":
			v[i] = "(empty)"
		default:
			v[i] = s
		}
	}
	return v, nil
}
