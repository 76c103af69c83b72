package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/shmzone/shmzone/dict"
)

var incrCmd = &command{
	name:    "incr",
	args:    "ZONE KEY [DELTA]",
	summary: "add to a number and print the sum",
	help: `Incr adds DELTA (default 1; negative subtracts) to the int or float under
KEY, atomically across processes, and prints the sum; the TTL and flags stay.
It exits 1 when KEY is absent, unless --init creates it as INIT+DELTA, and 8
when KEY holds bytes, a bool or a list. --float adds a float delta (an int
becomes a float) and prints the float sum.

  shmctl incr app hits
  shmctl incr app hits -1
  shmctl incr app hits --init 0 --ttl 1m`,
	min: 2, max: 3,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		float := fs.Bool("float", false, "add DELTA as a float (IncrFloat)")
		init := fs.String("init", "", "create an absent or expired KEY as this int plus DELTA (IncrInit)")
		ttl := fs.String("ttl", "0", "with --init: the TTL of a created key, such as 1m; 0 = never")
		return func(e *env, args []string) error {
			delta := "1"
			if len(args) == 3 {
				delta = args[2]
			}
			switch {
			case *init != "" && *float:
				return usagef("--init works with int deltas only")
			case *init == "" && *ttl != "0":
				return usagef("--ttl needs --init: incr keeps a live key's TTL")
			case *float:
				f, err := strconv.ParseFloat(delta, 64)
				if err != nil {
					return usagef("bad float delta %q", delta)
				}
				return incr(e, args, func(d *dict.Dict) (any, error) { return d.IncrFloat(args[1], f) })
			}
			n, err := strconv.ParseInt(delta, 10, 64)
			if err != nil {
				return usagef("bad delta %q: want an integer (or --float)", delta)
			}
			if *init == "" {
				return incr(e, args, func(d *dict.Dict) (any, error) { return d.Incr(args[1], n) })
			}
			start, err := strconv.ParseInt(*init, 10, 64)
			if err != nil {
				return usagef("bad --init %q: want an integer", *init)
			}
			t, err := parseTTL(*ttl)
			if err != nil {
				return err
			}
			return incr(e, args, func(d *dict.Dict) (any, error) {
				sum, _, err := d.IncrInit(args[1], n, start, t)
				return sum, err
			})
		}
	},
}

// incr opens the zone, runs op on it and prints the sum op returns.
func incr(e *env, args []string, op func(d *dict.Dict) (any, error)) error {
	d, err := e.openWrite(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	sum, err := op(d)
	if err != nil {
		return keyError(args[1], err)
	}
	_, err = fmt.Fprintln(e.stdout, sum)
	return err
}
