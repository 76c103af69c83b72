// Package testutil helps tests that need more than one OS process. It
// re-executes the running test binary as a helper process (the os/exec
// TestHelperProcess pattern), reads a helper's output line by line, holds
// helpers at a common start line (Gate) or moves them through numbered
// steps together (Lockstep), names temporary zone files, and starts real
// redis-server processes and clusters on loopback ports (redis.go).
//
// A test package that runs helpers defines one entry point,
//
//	func TestHelperProcess(t *testing.T) {
//		testutil.RunHelper(map[string]func(args []string) error{
//			"incr": helperIncr,
//		})
//	}
//
// which does nothing in an ordinary test run, and starts a helper with
//
//	p := testutil.Start(t, testutil.Helper(t, "incr", path, "1000"), onLine)
//	if err := p.Wait(); err != nil { … }
//
// The helper named "incr" then runs in a new process with the arguments
// given, and exits 0 when it returns nil, 1 with the error on stderr
// otherwise.
//
// Invariants:
//
//	I1. A helper process never outlives the test that started it: Start
//	    registers a cleanup that kills it, and the kernel kills it when its
//	    parent dies (Pdeathsig).
//	I2. Every line a helper wrote to stdout before it exited, even by
//	    SIGKILL, reaches onLine before Wait or Kill returns: a pipe keeps
//	    what was written to it after the writer dies.
//
// Concurrency: Helper, Start and TempZone may be called from many goroutines,
// including goroutines of parallel tests. A Proc's methods may be called from
// many goroutines; onLine is called from one goroutine per Proc, in order.
// Across processes, helpers share nothing but what the test gives them (a zone
// path, a file, the start gate).
package testutil
