package main

import (
	"os"
	"testing"
)

func TestRm(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "a", "--size", "256K")
	h.ok("create", "b", "--size", "256K")
	os.WriteFile(h.path("junk"), []byte("not a zone"), 0o600)
	golden(t, "rm", h.transcript(
		[]string{"rm", "a", "b"},
		[]string{"rm", "a"},
		[]string{"rm", "junk"},
		[]string{"rm", "--force", "junk"},
		[]string{"ls"},
	))
}
