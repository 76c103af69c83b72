package testutil

import (
	"runtime"
	"testing"
	"time"
)

// WaitGoroutines waits up to within for the process to be back to at most
// before goroutines. If it is not, it fails t with every goroutine's
// stack. It checks that what a test started has stopped.
func WaitGoroutines(t testing.TB, before int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
