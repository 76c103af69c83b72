package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shmzone/shmzone/dict"
)

var setCmd = &command{
	name:    "set",
	args:    "ZONE KEY VALUE",
	summary: "store a value under a key",
	help: `Set stores VALUE under KEY, read as --kind (bytes by default), with a TTL
and user flags. A full shard evicts its least recently used entries to make
room, as dict.Set does (--safe refuses instead, and exits 8).

  shmctl set app greeting hello
  shmctl set app hits 0 --kind int --ttl 1m
  shmctl set app blob AP8= --base64 --flags 3`,
	min: 3, max: 3,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		w := defineWriteFlags(fs)
		return func(e *env, args []string) error {
			return w.store(e, args, (*dict.Dict).Set, (*dict.Dict).SafeSet)
		}
	},
}

// writeFlags are the flags of the verbs that store a value: set and add.
type writeFlags struct {
	kind  *string
	b64   *bool
	ttl   *string
	flags *uint
	safe  *bool
}

func defineWriteFlags(fs *flag.FlagSet) *writeFlags {
	return &writeFlags{
		kind:  fs.String("kind", "bytes", "how to read VALUE: bytes, int, float or bool"),
		b64:   fs.Bool("base64", false, "VALUE is base64 of the bytes to store (for binary values)"),
		ttl:   fs.String("ttl", "0", "time to live, such as 10s, 1m30s or 10 (seconds); 0 = never expires"),
		flags: fs.Uint("flags", 0, "user flags stored with the value, 0 to 4294967295"),
		safe:  fs.Bool("safe", false, "do not evict other entries: fail when the value does not fit"),
	}
}

// store parses ZONE KEY VALUE and the flags, and stores the value with
// evicting, which reports whether live entries were evicted, or with safe
// when --safe is set.
func (w *writeFlags) store(e *env, args []string,
	evicting func(d *dict.Dict, key string, v dict.Value, ttl time.Duration, flags uint32) (bool, error),
	safe func(d *dict.Dict, key string, v dict.Value, ttl time.Duration, flags uint32) error) error {
	v, err := parseValue(*w.kind, args[2], *w.b64)
	if err != nil {
		return err
	}
	ttl, err := parseTTL(*w.ttl)
	if err != nil {
		return err
	}
	if *w.flags > math.MaxUint32 {
		return usagef("bad --flags %d: want 0 to 4294967295", *w.flags)
	}
	d, err := e.openWrite(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	var forcible bool
	if *w.safe {
		err = safe(d, args[1], v, ttl, uint32(*w.flags))
	} else {
		forcible, err = evicting(d, args[1], v, ttl, uint32(*w.flags))
	}
	if forcible {
		fmt.Fprintln(e.stderr, "shmctl: note: live entries were evicted to make room")
	}
	return keyError(args[1], err)
}

// parseTTL reads a TTL: a Go duration ("1m30s") or whole seconds ("90").
func parseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseInt(s, 10, 64)
		if nerr != nil || n > math.MaxInt64/int64(time.Second) {
			return 0, usagef("bad TTL %q: want a duration such as 10s or 1m30s, or seconds", s)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 {
		return 0, usagef("bad TTL %q: negative", s)
	}
	return d, nil
}
