package main

import (
	"flag"
	"os"

	"github.com/shmzone/shmzone/shm"
)

var rmCmd = &command{
	name:    "rm",
	args:    "ZONE...",
	summary: "remove zone files",
	help: `Rm removes each ZONE's file, after checking that it is a zone (--force
removes a file that is not, or no longer, a valid zone). Processes that have
the zone open keep using it until they close it; the next open of the name
finds no zone, or creates a new one.`,
	min: 1, max: -1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		force := fs.Bool("force", false, "remove the file even when it is not a valid zone")
		return func(e *env, args []string) error {
			for _, name := range args {
				if !*force {
					d, err := e.openRead(name)
					if err != nil {
						return err
					}
					d.Close()
				}
				if err := os.Remove(shm.Path(name)); err != nil {
					return &zoneError{shm.Path(name), err}
				}
			}
			return nil
		}
	},
}
