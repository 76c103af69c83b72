package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/shmzone/shmzone/dict"
)

var restoreCmd = &command{
	name:    "restore",
	args:    "ZONE [FILE]",
	summary: "read keys that dump wrote into a zone",
	help: `Restore reads the JSON lines dump writes, from FILE or stdin, and stores
each key in ZONE with its kind, value, flags and the TTL it had left. A key
that exists is overwritten (a list is replaced, not appended to). ZONE may
have another size or shard count than the dumped one: dump, restore into a
new zone, and rm the old one to resize a zone.

  shmctl dump app | shmctl restore app2 --size 256M

When ZONE does not exist, --size creates it (with --shards shards). When
it exists, --size must be its size: restore never resizes a zone. Restore
never evicts: it stops with exit code 8 at the first key that does not fit,
or the first line that is not a key (a ttl_ms beyond 292 years, a number
out of its kind's range, a value that is null or missing, a list of no
elements, a key longer than 65535 bytes), and names that line. The keys of the lines before
it are stored; the key that failed keeps the value it had (a list is built
whole before it replaces the old one).

Restore stores the registry records of the dump's record lines, over the
records of their keys. It stops with exit code 8 at a record line that is
not a record, and names that line. A dump without record lines leaves the
registry as it is.`,
	min: 1, max: 2,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		size := fs.String("size", "", "create ZONE with this size when it does not exist, e.g. 256M")
		shards := fs.Int("shards", 0, "with --size: the new zone's shard count, a power of two; 0 chooses")
		return func(e *env, args []string) error {
			var o dict.Options
			if *size != "" {
				n, err := parseSize(*size)
				if err != nil {
					return err
				}
				o = dict.Options{Size: n, Shards: *shards}
			} else if *shards != 0 {
				return usagef("--shards needs --size")
			}
			in := e.stdin
			if len(args) == 2 && args[1] != "-" {
				f, err := os.Open(args[1])
				if err != nil {
					// %v: the dump's error is no zone's (exit codes 3 to 7).
					return fmt.Errorf("cannot read the dump: %v", err)
				}
				defer f.Close()
				in = f
			}
			return runRestore(e, args[0], o, in)
		}
	},
}

func runRestore(e *env, name string, o dict.Options, in io.Reader) error {
	open := e.openWrite
	if o.Size > 0 {
		open = e.openCreate
	}
	d, err := open(name, o)
	if err != nil {
		return err
	}
	defer d.Close()
	r := bufio.NewReader(in)
	n, recs := 0, 0
	for line := 1; ; line++ {
		b, rerr := r.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("line %d: %v", line, rerr)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			key, isRec, err := restoreLine(d, b)
			switch {
			case errors.Is(err, dict.ErrNoMemory):
				err = fmt.Errorf("zone full after %d keys: restore into a larger zone", n)
			case errors.Is(err, dict.ErrKeyTooLong):
				// %v: a bad line exits 8, not 2 as a bad key on the command line does.
				err = fmt.Errorf("%v: at most %d bytes", err, dict.MaxKeyLen)
			case errors.Is(err, dict.ErrEmptyKey):
				err = fmt.Errorf("%v", err)
			}
			if err != nil && key != "" {
				return fmt.Errorf("line %d (key %s): %w", line, shortKey(key), err)
			}
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			if isRec {
				recs++
			} else {
				n++
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	if recs > 0 {
		_, err = fmt.Fprintf(e.stdout, "restored %d keys and %d registry records into %s\n", n, recs, d.Path())
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "restored %d keys into %s\n", n, d.Path())
	return err
}

// restoreLine decodes one line of a dump and stores its key or registry
// record. It returns the key as far as it was read, for messages, and
// whether the line is a record.
func restoreLine(d *dict.Dict, b []byte) (key string, isRec bool, err error) {
	var j jsonLine
	if err := json.Unmarshal(b, &j); err != nil {
		return "", false, err
	}
	if j.Record != nil {
		r, err := j.record()
		if err == nil {
			err = restoreRecord(d, r)
		}
		return "", true, err
	}
	it, err := j.item()
	if err == nil {
		err = restoreItem(d, it)
	}
	return it.key, false, err
}

// restoreItem stores one key without evicting others. A failed key keeps
// the value it had: a list is built whole before it replaces it.
func restoreItem(d *dict.Dict, it item) error {
	if !it.isList {
		return d.SafeSet(it.key, it.value, it.ttl, it.flags)
	}
	if it.flags != 0 {
		return fmt.Errorf("flags %d on a list: lists have no flags", it.flags)
	}
	return d.SetList(it.key, it.list, it.ttl)
}
