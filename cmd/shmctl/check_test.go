package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/shm"
)

func TestCheck(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	golden(t, "check", h.transcript([]string{"check", "app"}, []string{"check", "--repair", "app"}))
	golden(t, "check_json", h.transcript([]string{"check", "--json", "app"}, []string{"check", "--json", "--repair", "app"}))
}

// Where dict keeps a shard's entry count and its index (dict/layout.go):
// the index follows the 128-byte shard header, whose Count is at byte 28.
const (
	shardHdrSize = 128
	countOff     = 28
)

// zoneHeader returns a zone's validated header.
func zoneHeader(t *testing.T, path string) shm.Header {
	t.Helper()
	z, err := shm.Open(path, shm.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	return z.Header()
}

// patchZone lets fn change the bytes of a zone's first shard in the file.
func patchZone(t *testing.T, path string, fn func(shard []byte, h shm.Header)) {
	t.Helper()
	h := zoneHeader(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn(b[h.ShardOff:h.ShardOff+h.ShardSize], h)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// setCount makes the shard's entry count wrong.
func setCount(shard []byte, _ shm.Header) {
	binary.LittleEndian.PutUint32(shard[countOff:], 99)
}

// breakSlot points the first used index slot 4 bytes past its entry, where
// no entry starts.
func breakSlot(shard []byte, h shm.Header) {
	for i := 0; i < h.IndexSize; i++ {
		slot := shard[shardHdrSize+4*i:]
		if off := binary.LittleEndian.Uint32(slot); off != 0 {
			binary.LittleEndian.PutUint32(slot, off+4)
			return
		}
	}
}

func TestCheckCorruptGolden(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	patchZone(t, h.path("app"), setCount)
	golden(t, "check_corrupt", h.transcript(
		[]string{"check", "app"},
		[]string{"check", "--json", "app"},
		[]string{"check", "--repair", "app"},
		[]string{"check", "app"},
	))
}

// TestCheckRepair injects corruption into a shard: check reports it and
// exits 1, check --repair fixes it, then check exits 0 and every key reads
// as before.
func TestCheckRepair(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func([]byte, shm.Header)
		want    string
	}{
		{"count", setCount, "shard 0: count 99, index holds 9"},
		{"index slot", breakSlot, "is not a valid entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.fixture()
			before := h.ok("dump", "app")
			patchZone(t, h.path("app"), tt.corrupt)

			out, _, code := h.run("check", "app")
			if code != exitNo || !strings.Contains(out, tt.want) {
				t.Fatalf("check of a corrupt zone: exit %d, output\n%s\nwant exit 1 and %q", code, out, tt.want)
			}
			out, _, _ = h.run("check", "--json", "app")
			var r checkReport
			if err := json.Unmarshal([]byte(out), &r); err != nil || r.OK || len(r.Problems) == 0 {
				t.Errorf("check --json = %s (%v), want ok false and problems", out, err)
			}
			out = h.ok("check", "--repair", "app")
			if !strings.Contains(out, "repaired 1 shard(s)") || !strings.HasSuffix(out, ": sound\n") {
				t.Errorf("check --repair said\n%s", out)
			}
			h.ok("check", "app")
			if after := h.ok("dump", "app"); after != before {
				t.Errorf("keys after repair:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

// TestCheckHeader: a corrupt zone header is reported, and no repair fixes it.
func TestCheckHeader(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	corruptHeader(t, h.path("app"))
	for _, args := range [][]string{{"check", "app"}, {"check", "--repair", "app"}} {
		out, _, code := h.run(args...)
		if code != exitNo || !strings.Contains(out, "header checksum") || !strings.Contains(out, "restore an earlier dump") {
			t.Errorf("shmctl %q: exit %d, output %q; want exit 1 and the problem", args, code, out)
		}
	}
}

// breakSlabMagic flips a bit of the shard's slab magic ("SLB2", slab's
// layout.go), the first word of its slab header.
func breakSlabMagic(t *testing.T) func(shard []byte, _ shm.Header) {
	return func(shard []byte, _ shm.Header) {
		var m [4]byte
		binary.NativeEndian.PutUint32(m[:], 0x534c4232)
		i := bytes.Index(shard, m[:])
		if i < 0 {
			t.Fatal("no slab magic in shard 0")
		}
		shard[i] ^= 1
	}
}

// A one-shard zone whose slab header is corrupt: check finds it and
// advises check --repair, and check --repair, whose read-write open
// rebuilds the shard, leaves the zone sound with its key. The advice once
// led nowhere: no open of such a zone succeeded, and check --repair gave
// the same advice again.
func TestCheckRepairOneShardZone(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	h.ok("set", "app", "k", "v")
	patchZone(t, h.path("app"), breakSlabMagic(t))
	out, _, code := h.run("check", "app")
	if want := "shmctl check --repair rebuilds the broken shards"; code != exitNo || !strings.Contains(out, want) {
		t.Errorf("check = exit %d, output\n%s\nwant exit 1 and %q", code, out, want)
	}
	out, _, code = h.run("check", "--repair", "app")
	want := "opening the zone read-write rebuilt the shard(s) that kept it from opening read-only:\n  dict: " + h.path("app") + " shard 0: slab: bad region: magic"
	if code != exitOK || !strings.Contains(out, want) || strings.Contains(out, "check --repair rebuilds") {
		t.Errorf("check --repair = exit %d, output\n%s\nwant exit 0 and %q", code, out, want)
	}
	h.ok("check", "app")
	if got, want := h.ok("get", "app", "k"), "bytes \"v\" flags=0 ttl=never\n"; got != want {
		t.Errorf("get app k after check --repair = %q, want %q", got, want)
	}
}

// A shard whose slab header is corrupt, in a zone with a sound one, is
// rebuilt by opening the zone read-write: check --repair says so, rather
// than "repaired 0 shard(s)", and the zone is then sound.
func TestCheckRepairReportsShardRebuiltOnOpen(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "2")
	h.ok("set", "app", "k", "v")
	patchZone(t, h.path("app"), breakSlabMagic(t))
	out, _, code := h.run("check", "--repair", "app")
	want := "opening the zone read-write rebuilt the shard(s) that kept it from opening read-only:\n  dict: " + h.path("app") + " shard 0: slab: bad region: magic"
	if code != exitOK || !strings.Contains(out, want) || !strings.Contains(out, "repaired 0 more shard(s)") {
		t.Errorf("check --repair = exit %d, output\n%s\nwant exit 0 and %q", code, out, want)
	}
	h.ok("check", "app")
}
