package shmfiber_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

func newStorage(t *testing.T, d *dict.Dict, o shmfiber.StorageOptions) *shmfiber.Storage {
	t.Helper()
	s, err := shmfiber.NewStorage(d, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStorageGetSetDelete(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	s := newStorage(t, d, shmfiber.StorageOptions{})
	if v, err := s.Get("absent"); v != nil || err != nil {
		t.Fatalf("Get(absent) = %q, %v, want nil, nil", v, err)
	}
	val := []byte("value-1")
	if err := s.Set("k", val, 0); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X' // the Storage holds its own copy
	v, err := s.Get("k")
	if err != nil || string(v) != "value-1" {
		t.Fatalf("Get(k) = %q, %v, want value-1", v, err)
	}
	v[0] = 'Y' // and hands out copies
	if v, _ := s.Get("k"); string(v) != "value-1" {
		t.Fatalf("Get(k) after changing a result = %q", v)
	}
	// The key lives under the prefix in the zone.
	if got, _, err := d.Get(shmfiber.DefaultPrefix + "k"); err != nil || got.String() != "value-1" {
		t.Fatalf("zone key %q = %v, %v", shmfiber.DefaultPrefix+"k", got, err)
	}
	if err := s.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("k"); v != nil || err != nil {
		t.Fatalf("Get(k) after Delete = %q, %v", v, err)
	}
	if err := s.Delete("k"); err != nil {
		t.Fatalf("Delete of an absent key = %v, want nil", err)
	}
}

// fiber.Storage: an empty key or value is ignored without an error.
func TestStorageIgnoresEmpty(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	s := newStorage(t, d, shmfiber.StorageOptions{})
	if err := s.Set("", []byte("v"), 0); err != nil {
		t.Errorf("Set(\"\") = %v", err)
	}
	if err := s.Set("k", nil, 0); err != nil {
		t.Errorf("Set(k, nil) = %v", err)
	}
	if v, err := s.Get("k"); v != nil || err != nil {
		t.Errorf("Get(k) = %q, %v, want nothing stored", v, err)
	}
	if n := d.Stats().Entries; n != 0 {
		t.Errorf("zone has %d entries, want 0", n)
	}
}

func TestStorageExpiry(t *testing.T) {
	d, clk := zonetest.Open(t, dict.Options{})
	s := newStorage(t, d, shmfiber.StorageOptions{})
	if err := s.Set("short", []byte("a"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("forever", []byte("b"), 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1999 * time.Millisecond)
	if v, _ := s.Get("short"); string(v) != "a" {
		t.Fatalf("Get(short) at 1.999s = %q, want a", v)
	}
	clk.Advance(time.Millisecond)
	if v, err := s.Get("short"); v != nil || err != nil {
		t.Fatalf("Get(short) at 2s = %q, %v, want expired", v, err)
	}
	clk.Advance(365 * 24 * time.Hour)
	if v, _ := s.Get("forever"); string(v) != "b" {
		t.Fatalf("Get(forever) a year later = %q, want b", v)
	}
	if err := s.Set("neg", []byte("c"), -time.Second); !errors.Is(err, dict.ErrBadTTL) {
		t.Fatalf("Set with a negative exp = %v, want dict.ErrBadTTL", err)
	}
}

// Reset deletes the Storage's keys and no other: another Storage's and the
// zone's other users' stay.
func TestStorageResetConfined(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	sess := newStorage(t, d, shmfiber.StorageOptions{Prefix: "sess:"})
	cache := newStorage(t, d, shmfiber.StorageOptions{Prefix: "cache:"})
	for i := range 100 {
		k := strings.Repeat("k", i%7+1) + string(rune('a'+i%26)) + string(rune('0'+i/26))
		if err := sess.Set(k, []byte("s"), 0); err != nil {
			t.Fatal(err)
		}
		if err := cache.Set(k, []byte("c"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SafeSet("other", dict.Int(7), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.SafeSet("sess", dict.String("no prefix match"), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := sess.Reset(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	err := d.Scan(func(it dict.Item) bool {
		switch {
		case strings.HasPrefix(it.Key, "sess:"):
			counts["sess"]++
		case strings.HasPrefix(it.Key, "cache:"):
			counts["cache"]++
		default:
			counts[it.Key]++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"cache": 100, "other": 1, "sess": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("after Reset, %s: %d keys, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	if counts["sess"] != 1 { // the plain "sess" key, not one under "sess:"
		t.Errorf("keys under sess: left: %v", counts)
	}
}

func TestStorageContextAndClose(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	s := newStorage(t, d, shmfiber.StorageOptions{})
	if err := s.Set("k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]error{}
	_, calls["GetWithContext"] = s.GetWithContext(ctx, "k")
	calls["SetWithContext"] = s.SetWithContext(ctx, "k", []byte("w"), 0)
	calls["DeleteWithContext"] = s.DeleteWithContext(ctx, "k")
	calls["ResetWithContext"] = s.ResetWithContext(ctx)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled) = %v, want context.Canceled", name, err)
		}
	}
	if v, _ := s.Get("k"); string(v) != "v" {
		t.Fatalf("Get(k) after cancelled calls = %q, want v untouched", v)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("k"); !errors.Is(err, shmfiber.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if err := s.Set("k", []byte("v"), 0); !errors.Is(err, shmfiber.ErrClosed) {
		t.Errorf("Set after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	// The Dict stays open for its other users.
	if v, _, err := d.Get(shmfiber.DefaultPrefix + "k"); err != nil || v.String() != "v" {
		t.Errorf("zone after Close: %v, %v", v, err)
	}
}

func TestStorageNoEvict(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	s := newStorage(t, d, shmfiber.StorageOptions{NoEvict: true})
	big := bytes.Repeat([]byte("x"), 4096)
	var err error
	for i := 0; err == nil && i < 10000; i++ {
		err = s.Set("k"+strings.Repeat("0", i%5)+string(rune('a'+i%26))+time.Duration(i).String(), big, 0)
	}
	if !errors.Is(err, dict.ErrNoMemory) {
		t.Fatalf("filling a zone with NoEvict: %v, want dict.ErrNoMemory", err)
	}
	if n := d.Stats().Evictions; n != 0 {
		t.Fatalf("NoEvict evicted %d entries", n)
	}
}

func TestNewStorageErrors(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	if _, err := shmfiber.NewStorage(nil, shmfiber.StorageOptions{}); !errors.Is(err, shmfiber.ErrNilDict) {
		t.Errorf("NewStorage(nil) = %v, want ErrNilDict", err)
	}
	long := strings.Repeat("p", dict.MaxKeyLen)
	if _, err := shmfiber.NewStorage(d, shmfiber.StorageOptions{Prefix: long}); !errors.Is(err, shmfiber.ErrBadPrefix) {
		t.Errorf("NewStorage(long prefix) = %v, want ErrBadPrefix", err)
	}
}
