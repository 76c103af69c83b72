package main

import (
	"errors"
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
KEY, atomically across processes, and prints the sum as KEY now holds it,
as get prints numbers: an int, or a float with its fraction (a float stays a
float); the TTL and flags stay. It exits 1 when KEY is absent, unless --init
creates it as INIT+DELTA, and 8 when KEY holds bytes, a bool or a list, or a
float whose sum with an int DELTA no int64 holds (NaN, an infinity, beyond
±2^63), which stays as it was (--float adds to it). --float adds a float
delta (an int becomes a float) and prints the float sum.

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
				return incr(e, args, func(d *dict.Dict) (dict.Value, error) {
					sum, err := d.IncrFloat(args[1], f)
					return dict.Float(sum), err
				})
			}
			n, err := strconv.ParseInt(delta, 10, 64)
			if err != nil {
				return usagef("bad delta %q: want an integer (or --float)", delta)
			}
			if *init == "" {
				return incr(e, args, func(d *dict.Dict) (dict.Value, error) {
					sum, err := d.Incr(args[1], n)
					return stored(d, args[1], n, sum, err)
				})
			}
			start, err := strconv.ParseInt(*init, 10, 64)
			if err != nil {
				return usagef("bad --init %q: want an integer", *init)
			}
			t, err := parseTTL(*ttl)
			if err != nil {
				return err
			}
			return incr(e, args, func(d *dict.Dict) (dict.Value, error) {
				sum, _, err := d.IncrInit(args[1], n, start, t)
				return stored(d, args[1], n, sum, err)
			})
		}
	},
}

// incr opens the zone, runs op on it and prints the sum op returns, as get
// prints a number.
func incr(e *env, args []string, op func(d *dict.Dict) (dict.Value, error)) error {
	d, err := e.openWrite(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	sum, err := op(d)
	if err != nil {
		return keyError(args[1], err)
	}
	_, err = fmt.Fprintln(e.stdout, human(sum))
	return err
}

// stored returns the sum that Incr or IncrInit returned with err, after
// adding the int delta to key, as the key holds it. An int's is sum itself,
// exact at any size; a float's is read back, as sum is the float sum
// truncated toward zero (a read, which counts a hit). A float whose sum no
// int64 holds, which Incr refuses, gets an error that tells what shmctl
// does with it rather than the dict package's.
func stored(d *dict.Dict, key string, delta, sum int64, err error) (dict.Value, error) {
	if err != nil && !errors.Is(err, dict.ErrNotNumber) {
		return dict.Value{}, err
	}
	v, _, gerr := d.Get(key)
	switch {
	case err != nil && gerr == nil && v.Kind() == dict.KindFloat:
		return dict.Value{}, fmt.Errorf("%w: float %s plus %d is beyond int64, and stays as it was; add to it as a float with shmctl incr --float",
			dict.ErrNotNumber, v, delta)
	case err != nil:
		return dict.Value{}, err
	case gerr == nil && v.Kind() == dict.KindFloat:
		return v, nil
	}
	return dict.Int(sum), nil
}
