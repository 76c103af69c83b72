package shm

import (
	"os"
	"path/filepath"
	"testing"
)

// Test helpers shared by the package's tests: small zones in temporary
// directories, mustOpen, and reading a zone file back.

// smallSize is a zone of two minimal shards.
const smallSize = HeaderSize + 2*MinShardSize

var small = Options{Size: smallSize, Shards: 2}

func tempZone(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.zone")
}

// mustOpen opens path and closes the zone when the test ends.
func mustOpen(t *testing.T, path string, o Options) *Zone {
	t.Helper()
	z, err := Open(path, o)
	if err != nil {
		t.Fatalf("Open(%s, %+v) = %v, want nil", path, o, err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// makeZone creates a small zone at path and returns its file bytes.
func makeZone(t *testing.T, path string) []byte {
	t.Helper()
	z, err := Open(path, small)
	if err != nil {
		t.Fatalf("Open(%s, small) = %v", path, err)
	}
	if err := z.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	return readFile(t, path)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
