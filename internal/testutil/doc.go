// Package testutil helps tests that need more than one OS process, and
// randomised tests. It re-executes the running test binary as a helper
// process (the os/exec TestHelperProcess pattern), reads a helper's output
// line by line, holds helpers at a common start line (Gate) or moves them
// through numbered steps together (Lockstep), names temporary zone files,
// and starts real redis-server processes and clusters on loopback ports
// (redis.go). NeedRoot (root.go) is the one rule for tests that need root:
// they skip with a reason when not root, and fail instead when CI=true.
//
// StartMaster (master.go) runs a master of package prefork as a helper and
// reads its reports: which children are ready, retired or dead. Exit
// (pidfd.go) tells when a process exits that is not the test's child, as a
// prefork child is once its master is gone.
//
// Clock (clock.go) is the tests' one fake clock: it stands at a fixed
// instant in the past until a test moves it, and gives the views that
// dict.Options.Clock and the limiters' time sources take.
//
// For layout tests (layout.go), CheckFields pins an overlay struct's fields,
// and Drawing and CheckDrawing read the ASCII drawing of it in a package's
// layout.go, so that a test holds the drawing to the struct.
//
// It also holds the one way to replay randomness (seed.go): every
// randomised test of the module takes its seed from Seed(t), and draws
// every stream from it (rand.NewPCG(seed, i) for the i-th), so that one
// number replays the whole test. Seed reads the environment variable
// SHMZONE_SEED, not a flag: a variable works with go test ./... and reaches
// re-executed helper processes, where a flag defined in one test package
// is unknown to the others. Unset, the seed is random and logged; a failing
// test prints the command that replays it,
//
//	replay: SHMZONE_SEED=123 go test -count=1 -run '^TestModel$/^shards=16$/^no-evict$' ./dict
//
// Fuzz targets' seed corpora, and the base zones and regions that fuzz
// inputs are written over, stay fixed: an input the fuzzer saved means
// something only over the bytes it was found on, and the fuzzer needs one
// input to give one run.
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
//	I3. Seed returns one seed per test tree: at every call in a test, and
//	    in its subtests once the test called it. With SHMZONE_SEED set, it
//	    returns that value in every test.
//
// Concurrency: Helper, Start, TempZone and Seed may be called from many
// goroutines, including goroutines of parallel tests. A Proc's methods may
// be called from many goroutines; onLine is called from one goroutine per
// Proc, in order. Across processes, helpers share nothing but what the test
// gives them (a zone path, a file, the start gate, a seed and a stream
// number).
package testutil
