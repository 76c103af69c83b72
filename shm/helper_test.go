package shm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// Helper processes: the test binary re-executed with SHM_HELPER=1 runs
// TestHelperProcess, which does what its arguments say and exits.

func helperCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "SHM_HELPER=1")
	cmd.Stderr = os.Stderr
	return cmd
}

func TestHelperProcess(t *testing.T) {
	if os.Getenv("SHM_HELPER") != "1" {
		return
	}
	args := os.Args
	for len(args) > 0 && args[0] != "--" {
		args = args[1:]
	}
	if len(args) < 3 {
		fmt.Fprintf(os.Stderr, "helper: bad arguments %q\n", os.Args)
		os.Exit(2)
	}
	os.Exit(helperMain(args[1], args[2], args[3:]))
}

func helperMain(verb, path string, args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", verb, err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	switch verb {
	case "open": // wait for a line on stdin, Open with Size, report
		if _, err := in.ReadString('\n'); err != nil {
			return fail(err)
		}
		z, err := Open(path, small)
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		fmt.Printf("created=%v seed=%d size=%d\n", z.Created(), z.Header().Seed, z.Header().Size)
		return 0
	case "lock": // take shard 0's first word, say so, wait to be killed
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		r := z.Lock(word64(z.Shard(0), 0))
		fmt.Printf("locked %d %d\n", z.OwnerWord(), r)
		io.Copy(io.Discard, in)
		return 0
	case "incr": // add 1 to shard 0's counter n times under its lock
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return fail(err)
		}
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		if _, err := in.ReadString('\n'); err != nil {
			return fail(err)
		}
		w, b := word64(z.Shard(0), 0), z.Shard(0)
		for i := 0; i < n; i++ {
			z.Lock(w)
			plainIncr(b[64:])
			Unlock(w)
		}
		return 0
	}
	return fail(fmt.Errorf("unknown verb"))
}

// plainIncr adds 1 to the counter at b[0:8] with plain loads and stores: only
// a lock makes it exact.
func plainIncr(b []byte) {
	nativeOrder.PutUint64(b, nativeOrder.Uint64(b)+1)
}
