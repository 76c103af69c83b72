package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

var createCmd = &command{
	name:    "create",
	args:    "ZONE",
	summary: "create a zone of a given size",
	help: `Create creates a zone file of --size bytes, all allocated at once, with
--shards shards (a power of two; each has its own lock and eviction order).
It exits 1 when the zone exists: an existing zone keeps its size (use dump
and restore to move its keys to a zone of another size). It writes no file
that exists: any other file there, empty or not, is not a zone and is
refused with exit code 4 (rm --force removes it).`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		size := fs.String("size", "", "zone size in bytes, with K, M, G or T (required), e.g. 64M")
		shards := fs.Int("shards", 0, "shard count, a power of two up to 4096; 0 chooses one per 512 KiB, up to 64")
		perm := fs.String("perm", "0600", "file mode of the zone, in octal but not 0, set exactly whatever the umask")
		return func(e *env, args []string) error {
			if *size == "" {
				return usagef("--size is required")
			}
			n, err := parseSize(*size)
			if err != nil {
				return err
			}
			mode, err := strconv.ParseUint(*perm, 8, 32)
			if err != nil || mode&^0o777 != 0 {
				return usagef("bad --perm %q: want an octal file mode such as 0644", *perm)
			}
			if mode == 0 { // dict.Options.Perm 0 is the default
				return usagef("bad --perm %q: mode 0 would give the default, 0600; want a mode such as 0644", *perm)
			}
			return runCreate(e, args[0], dict.Options{Size: n, Shards: *shards, Perm: os.FileMode(mode)})
		}
	},
}

func runCreate(e *env, name string, o dict.Options) error {
	if err := checkZoneName(name); err != nil {
		return err
	}
	path := shm.Path(name)
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("%w: %s is a directory; name a file in it, such as %s", shm.ErrNotRegular, path, filepath.Join(path, "app.zone"))
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%w: %s", shm.ErrNotRegular, path)
		}
		// A zone, even a corrupt one, exists; any other file is no zone.
		d, err := e.openRead(name)
		if err == nil {
			d.Close()
		}
		if errors.Is(err, shm.ErrNotZone) {
			return fmt.Errorf("%w: %s exists and is not a zone: create writes no file that exists (rm --force removes it)", shm.ErrNotZone, path)
		}
		return fmt.Errorf("%w: %s", errZoneExists, path)
	}
	d, err := e.openCreate(name, o)
	if errors.Is(err, dict.ErrSizeMismatch) {
		// Another process created the zone since the Lstat, at another size.
		return fmt.Errorf("%w: %s", errZoneExists, path)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if !d.Created() {
		return fmt.Errorf("%w: %s", errZoneExists, path)
	}
	h := d.Header()
	fmt.Fprintf(e.stdout, "created %s: %s, %d shard(s) of %s\n", path, formatSize(h.Size), h.Shards, formatSize(h.ShardSize))
	return nil
}

// checkZoneName refuses a zone name that can name no file: the empty name,
// and ".", ".." or any path whose last element is one of them or empty.
func checkZoneName(name string) error {
	if name == "" {
		return usagef("empty zone name: want a name such as app, or a file path such as ./app.zone")
	}
	if base := name[strings.LastIndexByte(name, '/')+1:]; base == "" || base == "." || base == ".." {
		return usagef("zone name %q names a directory, not a file: want a name such as app, or a file path such as ./app.zone", name)
	}
	return nil
}
