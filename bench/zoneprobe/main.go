// Command zoneprobe times dict Incr or Get on a set of hot keys in a zone
// of a given size, in a process of its own, and prints ns per operation.
// bench/zoneab.sh builds it against two commits and runs the two
// alternately. It uses only API that the dict package has had from its
// first release, so that an old commit builds it too.
//
//	zoneprobe -size 256 -keys 1000 -op incr -n 10000000
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "zoneprobe:", err)
		}
		os.Exit(2)
	}
}

// run parses args, times the operation, and prints its ns/op to out.
// Flag errors and usage go to errOut.
func run(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("zoneprobe", flag.ContinueOnError)
	fs.SetOutput(errOut)
	size := fs.Int("size", 64, "zone size in MiB")
	keys := fs.Int("keys", 1000, "number of keys, each an int")
	op := fs.String("op", "incr", "operation: incr or get")
	n := fs.Int("n", 10000000, "operations timed, after a tenth as many untimed")
	dir := fs.String("dir", "/dev/shm", "directory of the zone file, removed at the end")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case *size < 1 || *size > 1<<16:
		return fmt.Errorf("-size %d: want 1 to 65536 MiB", *size)
	case *keys < 1:
		return fmt.Errorf("-keys %d: want at least 1", *keys)
	case *op != "incr" && *op != "get":
		return fmt.Errorf("-op %q: want incr or get", *op)
	case *n < 1:
		return fmt.Errorf("-n %d: want at least 1", *n)
	}
	path := filepath.Join(*dir, fmt.Sprintf("zoneprobe-%d.zone", os.Getpid()))
	d, err := dict.Open(path, dict.Options{Size: int64(*size) << 20})
	if err != nil {
		return err
	}
	defer os.Remove(path)
	defer d.Close()
	ks := make([]string, *keys)
	for i := range ks {
		ks[i] = fmt.Sprintf("key:%011d", i)
		if _, err := d.Set(ks[i], dict.Int(int64(i)), 0, 0); err != nil {
			return fmt.Errorf("set %s: %w", ks[i], err)
		}
	}
	if ev := d.Stats().Evictions; ev != 0 {
		return errors.New("the keys do not fit: the zone evicted some while filling")
	}
	do := func(n int) error {
		for i := 0; i < n; i++ {
			k := ks[i%len(ks)]
			var err error
			if *op == "incr" {
				_, err = d.Incr(k, 1)
			} else {
				_, _, err = d.Get(k)
			}
			if err != nil {
				return fmt.Errorf("%s %s: %w", *op, k, err)
			}
		}
		return nil
	}
	if err := do(*n / 10); err != nil {
		return err
	}
	start := time.Now()
	if err := do(*n); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%.2f\n", float64(time.Since(start).Nanoseconds())/float64(*n))
	return err
}
