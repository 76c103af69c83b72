package main

import (
	"flag"
	"fmt"

	"github.com/shmzone/shmzone/dict"
)

var flushCmd = &command{
	name:    "flush",
	args:    "ZONE",
	summary: "remove every entry, or the expired ones",
	help: `Flush removes every entry of the zone and frees its memory. With --expired
it removes only expired entries (which reads skip anyway, and which writes
reclaim when they need room) and prints how many it removed.`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		expired := fs.Bool("expired", false, "remove only the expired entries, and print their number")
		return func(e *env, args []string) error {
			d, err := e.openWrite(args[0], dict.Options{})
			if err != nil {
				return err
			}
			defer d.Close()
			if !*expired {
				return d.FlushAll()
			}
			n, err := d.FlushExpired(0)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "removed %d expired entries\n", n)
			return err
		}
	},
}
