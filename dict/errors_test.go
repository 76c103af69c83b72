package dict

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests of the sentinel errors: the one each operation returns for an empty
// or too long key, a negative TTL, the zero Value, a closed Dict and a
// read-only view.

// specKeyOps calls every operation that takes a key with otherwise valid
// arguments.
var specKeyOps = []struct {
	name string
	fn   func(d *Dict, key string) error
}{
	{"Set", func(d *Dict, k string) error { _, err := d.Set(k, Int(1), 0, 0); return err }},
	{"SafeSet", func(d *Dict, k string) error { return d.SafeSet(k, Int(1), 0, 0) }},
	{"Add", func(d *Dict, k string) error { _, err := d.Add(k, Int(1), 0, 0); return err }},
	{"SafeAdd", func(d *Dict, k string) error { return d.SafeAdd(k, Int(1), 0, 0) }},
	{"Replace", func(d *Dict, k string) error { _, err := d.Replace(k, Int(1), 0, 0); return err }},
	{"Delete", func(d *Dict, k string) error { return d.Delete(k) }},
	{"Get", func(d *Dict, k string) error { _, _, err := d.Get(k); return err }},
	{"GetInto", func(d *Dict, k string) error { _, _, err := d.GetInto(k, nil); return err }},
	{"GetStale", func(d *Dict, k string) error { _, _, _, err := d.GetStale(k); return err }},
	{"Incr", func(d *Dict, k string) error { _, err := d.Incr(k, 1); return err }},
	{"IncrFloat", func(d *Dict, k string) error { _, err := d.IncrFloat(k, 1); return err }},
	{"IncrInit", func(d *Dict, k string) error { _, _, err := d.IncrInit(k, 1, 0, 0); return err }},
	{"CompareAndSwap", func(d *Dict, k string) error { _, err := d.CompareAndSwap(k, Int(1), Int(2), 0); return err }},
	{"Update", func(d *Dict, k string) error {
		return d.Update(k, func(Value, bool) (Value, time.Duration, bool) { return Int(1), 0, true })
	}},
	{"Expire", func(d *Dict, k string) error { return d.Expire(k, time.Second) }},
	{"TTL", func(d *Dict, k string) error { _, err := d.TTL(k); return err }},
	{"LPush", func(d *Dict, k string) error { _, err := d.LPush(k, Int(1)); return err }},
	{"RPush", func(d *Dict, k string) error { _, err := d.RPush(k, Int(1)); return err }},
	{"LPop", func(d *Dict, k string) error { _, err := d.LPop(k); return err }},
	{"RPop", func(d *Dict, k string) error { _, err := d.RPop(k); return err }},
	{"LLen", func(d *Dict, k string) error { _, err := d.LLen(k); return err }},
}

// specWriteOps are the operations that must fail on a read-only view.
var specWriteOps = map[string]bool{
	"Set": true, "SafeSet": true, "Add": true, "SafeAdd": true, "Replace": true,
	"Delete": true, "Incr": true, "IncrFloat": true, "IncrInit": true,
	"CompareAndSwap": true, "Update": true, "Expire": true,
	"LPush": true, "RPush": true, "LPop": true, "RPop": true,
}

// specZoneOps are the operations without a key.
var specZoneOps = []struct {
	name string
	fn   func(d *Dict) error
}{
	{"Keys", func(d *Dict) error { _, err := d.Keys(0); return err }},
	{"FlushAll", func(d *Dict) error { return d.FlushAll() }},
	{"FlushExpired", func(d *Dict) error { _, err := d.FlushExpired(0); return err }},
	{"Repair", func(d *Dict) error { _, err := d.Repair(); return err }},
}

func TestErrorSentinels(t *testing.T) {
	t.Run("empty-key", func(t *testing.T) {
		d, _ := openTest(t, Options{})
		for _, op := range specKeyOps {
			wantErr(t, op.name+`("")`, op.fn(d, ""), ErrEmptyKey)
		}
	})
	t.Run("key-too-long", func(t *testing.T) {
		d, _ := openTest(t, Options{})
		long := strings.Repeat("x", MaxKeyLen+1)
		for _, op := range specKeyOps {
			wantErr(t, op.name+"(65536-byte key)", op.fn(d, long), ErrKeyTooLong)
		}
	})
	t.Run("negative-ttl", func(t *testing.T) {
		d, _ := openTest(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		for _, c := range []struct {
			name string
			fn   func() error
		}{
			{"Set", func() error { _, err := d.Set("k", Int(2), -1, 0); return err }},
			{"SafeSet", func() error { return d.SafeSet("k", Int(2), -time.Second, 0) }},
			{"Add", func() error { _, err := d.Add("new", Int(2), -1, 0); return err }},
			{"SafeAdd", func() error { return d.SafeAdd("new", Int(2), -1, 0) }},
			{"Replace", func() error { _, err := d.Replace("k", Int(2), -1, 0); return err }},
			{"IncrInit", func() error { _, _, err := d.IncrInit("new", 1, 0, -1); return err }},
			{"CompareAndSwap", func() error { _, err := d.CompareAndSwap("k", Int(1), Int(2), -1); return err }},
			{"Expire", func() error { return d.Expire("k", -1) }},
			{"Update", func() error {
				return d.Update("k", func(Value, bool) (Value, time.Duration, bool) { return Int(2), -1, true })
			}},
		} {
			wantErr(t, c.name+" with ttl < 0", c.fn(), ErrBadTTL)
		}
		wantGet(t, d, "k", Int(1), 0)
		wantGetErr(t, d, "new", ErrNotFound)
		if ttl, err := d.TTL("k"); ttl != 0 || err != nil {
			t.Fatalf("TTL(\"k\") = %v, %v; want 0, <nil>", ttl, err)
		}
	})
	t.Run("zero-value", func(t *testing.T) {
		d, _ := openTest(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		var zero Value
		for _, c := range []struct {
			name string
			fn   func() error
		}{
			{"Set", func() error { _, err := d.Set("k", zero, 0, 0); return err }},
			{"SafeSet", func() error { return d.SafeSet("k", zero, 0, 0) }},
			{"Add", func() error { _, err := d.Add("new", zero, 0, 0); return err }},
			{"SafeAdd", func() error { return d.SafeAdd("new", zero, 0, 0) }},
			{"Replace", func() error { _, err := d.Replace("k", zero, 0, 0); return err }},
			{"CompareAndSwap", func() error { _, err := d.CompareAndSwap("k", Int(1), zero, 0); return err }},
			{"LPush", func() error { _, err := d.LPush("l", zero); return err }},
			{"RPush", func() error { _, err := d.RPush("l", zero); return err }},
		} {
			wantErr(t, c.name+" of the zero Value", c.fn(), ErrBadValue)
		}
		wantGet(t, d, "k", Int(1), 0)
		wantGetErr(t, d, "new", ErrNotFound)
		// Update takes the zero Value to mean "leave it as it is".
		if err := d.Expire("k", time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"k", "new"} {
			if err := d.Update(key, func(Value, bool) (Value, time.Duration, bool) { return zero, 0, true }); err != nil {
				t.Fatalf("Update(%q) returning the zero Value = %v, want <nil>", key, err)
			}
		}
		wantGet(t, d, "k", Int(1), 0)
		if ttl, err := d.TTL("k"); ttl != time.Minute || err != nil {
			t.Fatalf("TTL(\"k\") after a no-op Update = %v, %v; want 1m0s, <nil>", ttl, err)
		}
		wantGetErr(t, d, "new", ErrNotFound)
		if n, err := d.LLen("l"); n != 0 || err != nil {
			t.Fatalf("LLen(\"l\") = %d, %v; want 0, <nil>", n, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		d, _ := openTest(t, Options{})
		specSet(t, d, "k", Int(1), 0, 0)
		if err := d.Err(); err != nil {
			t.Fatalf("Err() before Close = %v, want <nil>", err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("second Close() = %v", err)
		}
		for _, op := range specKeyOps {
			wantErr(t, op.name+" after Close", op.fn(d, "k"), ErrClosed)
		}
		for _, op := range specZoneOps {
			wantErr(t, op.name+" after Close", op.fn(d), ErrClosed)
		}
		wantErr(t, "Check after Close", d.Check(), ErrClosed)
		wantErr(t, "Err after Close", d.Err(), ErrClosed)
		if n := d.FreeSpace(); n != 0 {
			t.Fatalf("FreeSpace() after Close = %d, want 0", n)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		w, c := openTest(t, Options{})
		specSet(t, w, "k", Int(1), time.Hour, 4)
		if _, err := w.RPush("l", String("e")); err != nil {
			t.Fatalf("RPush = %v", err)
		}
		ro, err := Open(w.Path(), Options{ReadOnly: true, Clock: c.UnixMilli})
		if err != nil {
			t.Fatalf("Open(ReadOnly) = %v", err)
		}
		defer ro.Close()
		for _, op := range specKeyOps {
			err := op.fn(ro, "k")
			if specWriteOps[op.name] {
				wantErr(t, op.name+" on a read-only view", err, ErrReadOnly)
			} else if err != nil && !errors.Is(err, ErrNotList) {
				t.Fatalf("%s(\"k\") on a read-only view = %v", op.name, err)
			}
		}
		for _, op := range specZoneOps {
			if err := op.fn(ro); op.name != "Keys" {
				wantErr(t, op.name+" on a read-only view", err, ErrReadOnly)
			} else if err != nil {
				t.Fatalf("Keys(0) on a read-only view = %v", err)
			}
		}
		wantGet(t, ro, "k", Int(1), 4)
		if ttl, err := ro.TTL("k"); ttl != time.Hour || err != nil {
			t.Fatalf("TTL(\"k\") on a read-only view = %v, %v; want 1h, <nil>", ttl, err)
		}
		if n, err := ro.LLen("l"); n != 1 || err != nil {
			t.Fatalf("LLen(\"l\") on a read-only view = %d, %v; want 1, <nil>", n, err)
		}
		// The writer's changes show through the read-only view.
		specSet(t, w, "k", String("two"), 0, 5)
		wantGet(t, ro, "k", String("two"), 5)
		specCheck(t, ro)
	})
}
