package shmfiber

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/dict"
)

// DefaultPrefix is the namespace of a Storage whose StorageOptions name none.
const DefaultPrefix = "fiber:"

// StorageOptions configures a Storage. The zero value namespaces the keys
// under DefaultPrefix. It lets a full zone evict its least recently used
// entries to make room, as a cache wants.
type StorageOptions struct {
	// Prefix is prepended to every key, so that several Storages (a
	// session's, a cache's) and the zone's other users share one zone
	// without meeting; Reset deletes only the keys under it. Empty means
	// DefaultPrefix.
	Prefix string
	// NoEvict makes a write that does not fit fail with dict.ErrNoMemory
	// instead of evicting other entries (dict's SafeSet): for state that
	// must not silently vanish, such as sessions.
	NoEvict bool
}

// Storage is a fiber.Storage over a dict.Dict. Every process that opens the
// same zone file sees the same keys, each prefork child among them. It is
// safe for concurrent use by goroutines and processes. Each method is one
// dictionary operation; Reset is one per key.
//
// Storage does not own the Dict. Close stops the Storage, not the Dict,
// which its opener closes.
type Storage struct {
	d       *dict.Dict
	prefix  string
	noEvict bool
	closed  atomic.Bool
}

var _ fiber.Storage = (*Storage)(nil)

// NewStorage returns a Storage over d. Errors: ErrNilDict; ErrBadPrefix for
// a prefix as long as the dictionary's longest key.
func NewStorage(d *dict.Dict, o StorageOptions) (*Storage, error) {
	if d == nil {
		return nil, ErrNilDict
	}
	p := o.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	if len(p) >= dict.MaxKeyLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadPrefix, len(p))
	}
	return &Storage{d: d, prefix: p, noEvict: o.NoEvict}, nil
}

// Prefix returns the namespace of the Storage's keys.
func (s *Storage) Prefix() string { return s.prefix }

// usable returns the error that stops an operation before it starts.
func (s *Storage) usable(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// GetWithContext returns a copy of key's value, or nil and no error when the
// key is absent or expired. Errors: ctx's, ErrClosed, and the dictionary's
// (dict.ErrIsList for a key some other user holds as a list).
func (s *Storage) GetWithContext(ctx context.Context, key string) ([]byte, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, nil
	}
	v, _, err := s.d.Get(s.prefix + key)
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if v.Kind() != dict.KindBytes {
		// Not written by a Storage: its text form, as a string is.
		return []byte(v.String()), nil
	}
	return v.Bytes(), nil
}

// Get is GetWithContext with the background context.
func (s *Storage) Get(key string) ([]byte, error) {
	return s.GetWithContext(context.Background(), key)
}

// SetWithContext stores val under key for exp (0: until deleted or
// evicted). An empty key or value is ignored, as fiber.Storage says. val is
// copied into the zone and may be reused. Errors: ctx's, ErrClosed,
// dict.ErrBadTTL for a negative exp, dict.ErrKeyTooLong,
// dict.ErrValueTooLarge, and, with NoEvict, dict.ErrNoMemory.
func (s *Storage) SetWithContext(ctx context.Context, key string, val []byte, exp time.Duration) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if key == "" || len(val) == 0 {
		return nil
	}
	if s.noEvict {
		return s.d.SafeSet(s.prefix+key, dict.Bytes(val), exp, 0)
	}
	_, err := s.d.Set(s.prefix+key, dict.Bytes(val), exp, 0)
	return err
}

// Set is SetWithContext with the background context.
func (s *Storage) Set(key string, val []byte, exp time.Duration) error {
	return s.SetWithContext(context.Background(), key, val, exp)
}

// DeleteWithContext deletes key; an absent key is no error. Errors: ctx's,
// ErrClosed and the dictionary's.
func (s *Storage) DeleteWithContext(ctx context.Context, key string) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if key == "" {
		return nil
	}
	if err := s.d.Delete(s.prefix + key); err != nil && !errors.Is(err, dict.ErrNotFound) {
		return err
	}
	return nil
}

// Delete is DeleteWithContext with the background context.
func (s *Storage) Delete(key string) error {
	return s.DeleteWithContext(context.Background(), key)
}

// ResetWithContext deletes every key under the Storage's prefix, and no
// other. The zone's other users keep theirs. It scans the zone, then
// deletes the keys it found one by one. It checks ctx between them. A key
// written meanwhile may survive.
//
// Errors: ctx's, ErrClosed and the dictionary's.
func (s *Storage) ResetWithContext(ctx context.Context) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	var keys []string
	err := s.d.Scan(func(it dict.Item) bool {
		if strings.HasPrefix(it.Key, s.prefix) {
			keys = append(keys, it.Key)
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.d.Delete(k); err != nil && !errors.Is(err, dict.ErrNotFound) {
			return err
		}
	}
	return nil
}

// Reset is ResetWithContext with the background context.
func (s *Storage) Reset() error {
	return s.ResetWithContext(context.Background())
}

// Close stops the Storage: later calls return ErrClosed. The Dict stays
// open. Close is idempotent and returns nil.
func (s *Storage) Close() error {
	s.closed.Store(true)
	return nil
}
