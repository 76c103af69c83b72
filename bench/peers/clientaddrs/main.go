// Command clientaddrs prints the client keys of limiter's multi-process
// benchmarks, one a line: clients.Addrs(seed, stream, n), the keys that
// process number stream of BenchmarkLimiter's keys=own cases decides for
// when SHMZONE_SEED is seed. bench/peers/nginx.sh gives them to nginx, so
// that both sides decide for the same clients.
//
// Usage: clientaddrs -seed N [-stream I] [-n K].
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/shmzone/shmzone/internal/clients"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "clientaddrs: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clientaddrs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "the seed of the keys: SHMZONE_SEED of the benchmark they match")
	stream := fs.Uint64("stream", 0, "the stream: the number of the benchmark's process, from 0")
	n := fs.Int("n", 1000, "the number of keys")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *n < 1 {
		return fmt.Errorf("-n %d: want at least 1", *n)
	}
	w := bufio.NewWriter(stdout)
	for _, k := range clients.Addrs(*seed, *stream, *n) {
		fmt.Fprintln(w, k)
	}
	return w.Flush()
}
