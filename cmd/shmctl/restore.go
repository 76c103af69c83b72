package main

import (
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

When ZONE does not exist, --size creates it (with --shards shards). Restore
never evicts: it stops with exit code 8 at the first key that does not fit.`,
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
					return err
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
	dec := json.NewDecoder(in)
	n := 0
	for {
		var j jsonItem
		if err := dec.Decode(&j); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("record %d: %v", n+1, err)
		}
		it, err := j.item()
		if err == nil {
			err = restoreItem(d, it)
		}
		if errors.Is(err, dict.ErrNoMemory) {
			return fmt.Errorf("record %d (key %s): zone full after %d keys: restore into a larger zone", n+1, humanKey(it.key), n)
		}
		if errors.Is(err, dict.ErrLockTimeout) {
			return fmt.Errorf("record %d (key %s) after %d keys: %w", n+1, humanKey(it.key), n, err)
		}
		if err != nil {
			return fmt.Errorf("record %d: %v", n+1, err)
		}
		n++
	}
	_, err = fmt.Fprintf(e.stdout, "restored %d keys into %s\n", n, d.Path())
	return err
}

// restoreItem stores one key without evicting others.
func restoreItem(d *dict.Dict, it item) error {
	if !it.isList {
		return d.SafeSet(it.key, it.value, it.ttl, it.flags)
	}
	if err := d.Delete(it.key); err != nil {
		return err
	}
	for _, v := range it.list {
		if _, err := d.RPush(it.key, v); err != nil {
			return err
		}
	}
	if it.ttl > 0 && len(it.list) > 0 {
		return d.Expire(it.key, it.ttl)
	}
	return nil
}
