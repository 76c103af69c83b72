package main

import (
	"encoding/binary"
	"encoding/json"
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

// TestCheckBusy: a shard whose lock a live process keeps (here, inside
// Update) is not checked by the read-only check, which takes no lock and
// copies a shard only between two changes: after the lock timeout check
// lists it as busy, reports no problem, and exits 9 (busy), not 1. Once the
// holder lets go, the zone is sound.
func TestCheckBusy(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	d := h.dict("app")
	defer d.Close()
	release := holdShard(t, d)
	defer release()
	out, errs, code := h.run("check", "app")
	if code != exitBusy || !strings.Contains(out, "no problem found") || !strings.Contains(out, "1 shard(s) busy, not checked") ||
		strings.Contains(out, "--repair") || !strings.Contains(errs, "zone busy") || !strings.Contains(errs, "a live process holds its lock") {
		t.Errorf("check of a held shard: exit %d, stdout\n%s\nstderr\n%s\nwant exit %d, busy and no problem", code, out, errs, exitBusy)
	}
	out, _, code = h.run("check", "--json", "app")
	var r struct {
		OK       bool
		Problems []string
		Busy     []string
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitBusy || r.OK || len(r.Problems) != 0 || len(r.Busy) != 1 {
		t.Errorf("check --json of a held shard: exit %d, %v, output\n%s\nwant exit %d, ok false, no problems, one busy shard", code, err, out, exitBusy)
	}
	release()
	if out := h.ok("check", "app"); !strings.HasSuffix(out, ": sound\n") {
		t.Errorf("check after the holder let go said\n%s", out)
	}
}
