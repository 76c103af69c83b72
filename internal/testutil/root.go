package testutil

import (
	"os"
	"testing"
)

// NeedRoot skips the test unless it runs as root (effective uid 0), saying
// why it needs root. With CI=true in the environment it fails instead: CI
// runs the tests as root, and a test skipped there would hide a check that
// never ran.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("testutil: this test needs root (%s), and CI=true: CI must run the tests as root", why)
	}
	t.Skipf("testutil: skipped: needs root (%s); run as root to check it", why)
}
