package shm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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
	case "regwrite": // store record 7 with every word n, for n from 1 to args[0]
		n, err := strconv.Atoi(args[0])
		if err != nil {
			return fail(err)
		}
		return regWrite(path, n)
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
	case "die-in-format": // create a zone and die of SIGKILL while formatting it; args "nofallocate": as on a filesystem without fallocate
		if len(args) > 0 && args[0] == "nofallocate" {
			sysFallocate = fallocateFails(unix.EOPNOTSUPP)
		}
		o := small
		o.Format = func(z *Zone) error {
			copy(z.Shard(0), "half")
			fmt.Println("formatting")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		_, err := Open(path, o)
		return fail(fmt.Errorf("Open returned %v", err))
	case "try-open": // Open with the size args[0] (0: attach), print what came of it
		size, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return fail(err)
		}
		z, err := Open(path, Options{Size: size})
		if err != nil {
			fmt.Printf("err=%s %v\n", errorName(err), err)
			return 0
		}
		fmt.Printf("ok created=%v\n", z.Created())
		z.Close()
		return 0
	case "sparse": // attach read-write, then read-only and read every byte
		_, err := Open(path, Options{})
		fmt.Printf("rw=%s\n", errorName(err))
		z, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		fmt.Printf("ro=%s\n", errorName(readAll(z)))
		return 0
	case "truncated": // attach, have the file cut to its header page, then read and write
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		if err := os.Truncate(path, HeaderSize); err != nil {
			return fail(err)
		}
		fmt.Printf("read=%s write=%s\n", errorName(readAll(z)), errorName(writeAll(z)))
		return 0
	case "umask-create": // create a zone with Perm 0640 under umask 0777, print its mode
		syscall.Umask(0o777)
		z, err := Open(path, Options{Size: smallSize, Shards: 2, Perm: 0o640})
		if err != nil {
			return fail(err)
		}
		defer z.Close()
		fi, err := os.Stat(path)
		if err != nil {
			return fail(err)
		}
		fmt.Printf("mode=%v\n", fi.Mode())
		return 0
	case "lock": // take shard 0's first word, say so, wait to be killed
		z, err := Open(path, Options{})
		if err != nil {
			return fail(err)
		}
		r := z.Lock(word64(z.Shard(0), 0))
		fmt.Printf("locked %d %d\n", z.own.word, r)
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

// readAll reads every byte of z's shards, as a checker does.
func readAll(z *Zone) (err error) {
	defer CatchFault(&err, GuardFaults())
	var sum byte
	for i := 0; i < z.Header().Shards; i++ {
		for _, c := range z.Shard(i) {
			sum += c
		}
	}
	readSink = sum
	return nil
}

// readSink keeps readAll's loads from being optimised away.
var readSink byte

// writeAll writes a byte in every page of z's shards.
func writeAll(z *Zone) (err error) {
	defer CatchFault(&err, GuardFaults())
	for i := 0; i < z.Header().Shards; i++ {
		b := z.Shard(i)
		for off := 0; off < len(b); off += PageSize {
			b[off]++
		}
	}
	return nil
}

// errorName names the sentinel err wraps, for a helper's report.
func errorName(err error) string {
	if err == nil {
		return "nil"
	}
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrNotOwner", ErrNotOwner}, {"ErrNotZone", ErrNotZone}, {"ErrNoSpace", ErrNoSpace},
		{"ErrFault", ErrFault}, {"ErrCorrupt", ErrCorrupt}, {"ErrPermission", os.ErrPermission},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "other"
}
