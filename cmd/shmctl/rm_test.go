package main

import (
	"os"
	"path/filepath"
	"strings"
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

// rm removes zone files, never a directory, --force or not: it exits 4
// and the directory stays.
func TestRmRefusesDirectory(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.dir, "sub")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"rm", "--force", dir + "/"},
		{"rm", "--force", dir},
		{"rm", dir + "/"},
	} {
		_, errs, code := h.run(args...)
		if code != exitNotZone || !strings.Contains(errs, "not a regular file") {
			t.Errorf("shmctl %q = exit %d, stderr %q; want %d and not a regular file", args, code, errs, exitNotZone)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("shmctl %q removed the directory: %v", args, err)
		}
	}
}
