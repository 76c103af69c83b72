package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/shmzone/shmzone/dict"
)

var getCmd = &command{
	name:    "get",
	args:    "ZONE KEY",
	summary: "print a key's value with its kind, flags and TTL",
	help: `Get prints a key's value with its kind, its flags and the time it has left:

  int 42 flags=0 ttl=never
  bytes "hello\n" flags=3 ttl=9.5s
  list [int 1, bytes "two"] flags=0 ttl=never

Bytes are quoted in Go syntax. --raw prints the value alone, bytes as they
are. A list's elements are read without popping them. Get opens the zone
read-only: the key is not marked used, no hit is counted. It exits 1 when the
key is absent or expired.`,
	min: 2, max: 2,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print JSON: key, kind, value (value_b64 for bytes that are not UTF-8), flags, ttl_ms")
		raw := fs.Bool("raw", false, "print the value alone: bytes as they are, with no newline; a number or bool as text")
		return func(e *env, args []string) error {
			if *asJSON && *raw {
				return usagef("--json and --raw exclude each other")
			}
			return runGet(e, args[0], args[1], *asJSON, *raw)
		}
	},
}

func runGet(e *env, name, key string, asJSON, raw bool) error {
	d, err := e.openRead(name)
	if err != nil {
		return err
	}
	defer d.Close()
	it, err := readItem(d, key)
	if err != nil {
		return err
	}
	switch {
	case asJSON:
		return writeJSON(e.stdout, it.json(true), true)
	case raw && it.isList:
		return fmt.Errorf("--raw cannot print a list; use --json")
	case raw && it.value.Kind() == dict.KindBytes:
		_, err = e.stdout.Write(it.value.Bytes())
	case raw:
		_, err = fmt.Fprintln(e.stdout, it.value)
	default:
		_, err = fmt.Fprintf(e.stdout, "%s flags=%d ttl=%s\n", it.human(), it.flags, humanTTL(it.ttl))
	}
	return err
}

// readItem reads a key's value or list, its flags and its TTL.
func readItem(d *dict.Dict, key string) (item, error) {
	it := item{key: key}
	v, flags, err := d.Get(key)
	if errors.Is(err, dict.ErrIsList) {
		it.isList = true
		it.list, err = d.LRange(key)
		if err == nil && it.list == nil {
			err = dict.ErrNotFound // expired since Get
		}
	}
	if err == nil {
		it.ttl, err = d.TTL(key)
	}
	if err != nil {
		return it, keyError(key, err)
	}
	it.value, it.flags = v, flags
	return it, nil
}

// keyError names the key in an error about it.
func keyError(key string, err error) error {
	if err == nil {
		return nil
	}
	return &keyErr{key, err}
}

type keyErr struct {
	key string
	err error
}

func (k *keyErr) Unwrap() error { return k.err }

func (k *keyErr) Error() string {
	switch {
	case errors.Is(k.err, dict.ErrNotFound):
		return "no such key " + humanKey(k.key)
	case errors.Is(k.err, dict.ErrExists):
		return "key " + humanKey(k.key) + " exists"
	}
	return "key " + humanKey(k.key) + ": " + k.err.Error()
}
