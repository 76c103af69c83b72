package main

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/shm"
)

// TestCheckDeadLock: a shard lock word that names no live owner (0x1, left
// by no process) is a problem for check, not "sound"; check --repair takes
// the lock over and rebuilds the shard, and every key reads as before.
func TestCheckDeadLock(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	before := h.ok("dump", "app")
	patchZone(t, h.path("app"), func(shard []byte, _ shm.Header) {
		binary.NativeEndian.PutUint64(shard[0:], 0x1) // the shard's lock word, its first
	})
	out, _, code := h.run("check", "app")
	if code != exitNo || !strings.Contains(out, "shard 0: lock held by an owner that is gone (word 0x1)") {
		t.Fatalf("check with a dead lock word: exit %d, output\n%s\nwant exit 1 and the dead lock", code, out)
	}
	out = h.ok("check", "--repair", "app")
	if !strings.Contains(out, "repaired 1 shard(s)") || !strings.HasSuffix(out, ": sound\n") {
		t.Errorf("check --repair said\n%s", out)
	}
	h.ok("check", "app")
	if after := h.ok("dump", "app"); after != before {
		t.Errorf("keys after repair:\n%s\nwant\n%s", after, before)
	}
}
