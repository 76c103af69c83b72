package main

import "testing"

// TestDump: one shard, so the lines come in the order the keys were written
// (oldest first); the expired key is not dumped.
func TestDump(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	out := h.transcript([]string{"dump", "app"})
	golden(t, "dump", out)
	if again := h.transcript([]string{"dump", "app"}); again != out {
		t.Errorf("a second dump differs:\n%s", again)
	}
	if j := h.transcript([]string{"dump", "--json", "app"}); j[len("$ shmctl dump --json app"):] != out[len("$ shmctl dump app"):] {
		t.Errorf("dump --json differs from dump")
	}
}
