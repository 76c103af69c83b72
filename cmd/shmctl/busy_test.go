package main

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// TestProcessBusy runs the writing verbs as real processes while this
// process holds the zone's only shard inside Update: each gives up after the
// lock timeout with exit code 9 and says why, and changes nothing; the read
// verbs, which take no lock, answer.
func TestProcessBusy(t *testing.T) {
	dir := t.TempDir()
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 256 << 10, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Set("n", dict.Int(5), 0, 0); err != nil {
		t.Fatal(err)
	}
	release := holdShard(t, d)
	defer release()

	writes := [][]string{
		{"set", "app", "n", "6", "--kind", "int"},
		{"add", "app", "new", "1"},
		{"incr", "app", "n"},
		{"del", "app", "n"},
		{"expire", "app", "n", "1m"},
		{"flush", "app"},
		{"check", "--repair", "app"},
	}
	for _, args := range writes {
		start := time.Now()
		code, errs := exitOf(t, shmctl(t, dir, args...))
		if code != exitBusy || !strings.Contains(errs, "zone busy") || !strings.Contains(errs, "lock wait timed out") {
			t.Errorf("shmctl %q on a held shard: exit %d, stderr %q; want %d, zone busy and lock wait timed out", args, code, errs, exitBusy)
		}
		if el := time.Since(start); el < dict.DefaultLockTimeout {
			t.Errorf("shmctl %q gave up after %v, before the lock timeout %v", args, el, dict.DefaultLockTimeout)
		}
	}
	restore := shmctl(t, dir, "restore", "app")
	restore.Stdin = strings.NewReader(`{"key":"r","kind":"int","value":1}` + "\n")
	if code, errs := exitOf(t, restore); code != exitBusy {
		t.Errorf("shmctl restore on a held shard: exit %d, stderr %q; want %d", code, errs, exitBusy)
	}
	if code, errs := exitOf(t, shmctl(t, dir, "get", "app", "n")); code != exitOK {
		t.Errorf("shmctl get on a held shard: exit %d, stderr %q; want 0: reads take no lock", code, errs)
	}

	release()
	keys, err := d.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := d.Get("n"); err != nil || v.Int() != 5 || len(keys) != 2 {
		t.Errorf("after the busy writes: n = %v, %v, keys %q; want 5 and [n held]: a write that timed out changed something", v, err, keys)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
}

// holdShard keeps the lock of key "held"'s shard in a live Update until the
// returned release is called (once or more; the first call lets go and
// waits for the Update to return).
func holdShard(t *testing.T, d *dict.Dict) (release func()) {
	t.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.Update("held", func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
			close(held)
			<-free
			return dict.Int(1), 0, true
		})
	}()
	<-held
	var once sync.Once
	return func() {
		once.Do(func() {
			close(free)
			if err := <-done; err != nil {
				t.Errorf("holding Update = %v", err)
			}
		})
	}
}
