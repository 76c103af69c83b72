package dict_test

import (
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestZoneSizeRuns runs BenchmarkZoneSize's 10 MiB cases for a few
// operations: make test runs no benchmark, and only make bench would
// otherwise run this code.
func TestZoneSizeRuns(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		// Filling 100,000 keys takes seconds under the race detector;
		// the run without it checks that they fit.
		testutil.RunBenchmarks(t, "^BenchmarkZoneSize$/./^keys=1000$/^zone=10MiB$", 50, 2)
		return
	}
	testutil.RunBenchmarks(t, "^BenchmarkZoneSize$/././^zone=10MiB$", 50, 4)
}
