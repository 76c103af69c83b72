package main

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"time"
)

// readVerbs are the verbs that only read, with the zone "app" of the fixture.
var readVerbs = [][]string{
	{"info", "app"},
	{"info", "--json", "--shards", "app"},
	{"get", "app", "hits"},
	{"get", "app", "queue"},
	{"get", "--json", "app", "bin"},
	{"get", "--raw", "app", "greeting"},
	{"get", "app", "absent"},
	{"get", "app", "old"}, // expired: a writer would count a miss
	{"ttl", "app", "greeting"},
	{"ttl", "--json", "app", "pi"},
	{"keys", "app"},
	{"keys", "--long", "app"},
	{"keys", "--json", "app"},
	{"ls"},
	{"ls", "--json"},
	{"check", "app"},
	{"check", "--json", "app"},
	{"dump", "app"},
	{"watch", "app", "--count", "2"},
	{"watch", "--json", "app", "--count", "2"},
	{"limits", "show", "app"},
	{"limits", "show", "--json", "app"},
}

// TestReadVerbsChangeNothing runs every read verb and proves that it mapped
// the zone read-only and that the zone file's bytes are the same after it.
func TestReadVerbsChangeNothing(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.sleep = h.advance
	d := h.dict("app")
	d.Get("hits") // counters that are not zero, and a used bit set
	d.Close()
	path := h.path("app")
	for _, args := range readVerbs {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			before, mtime := fileState(t, path)
			h.opens = nil
			h.advance(time.Second) // and entries expire meanwhile
			_, errs, code := h.run(args...)
			if code != exitOK && code != exitNo {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if len(h.opens) == 0 {
				t.Errorf("opened no zone")
			}
			for _, readOnly := range h.opens {
				if !readOnly {
					t.Errorf("mapped a zone read-write")
				}
			}
			after, mtime2 := fileState(t, path)
			if after != before || !mtime2.Equal(mtime) {
				t.Errorf("the zone file changed: sha256 %x, then %x; mtime %v, then %v", before, after, mtime, mtime2)
			}
		})
	}
}

// fileState returns the SHA-256 of a file's bytes and its mtime.
func fileState(t *testing.T, path string) ([32]byte, time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b), fi.ModTime()
}

// TestWriteVerbsOpenReadWrite is the control: the verbs that write map the
// zone read-write, and the file's bytes change (but for a repair of a sound
// zone). check --repair first opens the zone read-only, to tell whether the
// read-write open rebuilt a shard.
func TestWriteVerbsOpenReadWrite(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	path := h.path("app")
	for _, args := range [][]string{
		{"set", "app", "k", "v"}, {"add", "app", "k2", "v"}, {"incr", "app", "hits"},
		{"expire", "app", "hits", "5s"}, {"del", "app", "k"}, {"flush", "--expired", "app"},
		{"check", "--repair", "app"}, {"flush", "app"},
	} {
		before, _ := fileState(t, path)
		h.opens = nil
		h.ok(args...)
		after, _ := fileState(t, path)
		opens := h.opens
		if args[0] == "check" && len(opens) > 0 && opens[0] {
			opens = opens[1:] // the read-only probe
		}
		if len(opens) != 1 || opens[0] || after == before && args[0] != "check" {
			t.Errorf("shmctl %q: opens (read-only?) %v, file changed %v; want one read-write open and a change",
				args, h.opens, after != before)
		}
	}
}
