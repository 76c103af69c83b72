package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/shmzone/shmzone/shm"
	"golang.org/x/sys/unix"
)

var rmCmd = &command{
	name:    "rm",
	args:    "ZONE...",
	summary: "remove zone files",
	help: `Rm removes each ZONE's file, after checking that it is a zone (--force
removes a file that is not, or no longer, a valid zone, but never a
directory). Processes that have the zone open keep using it until they
close it; the next open of the name finds no zone, or creates a new one.`,
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
				path := shm.Path(name)
				// unlink, not os.Remove, which would remove an empty directory.
				if err := unix.Unlink(path); err == unix.EISDIR {
					return fmt.Errorf("%w: %s is a directory", shm.ErrNotRegular, path)
				} else if err != nil {
					return &zoneError{path, &os.PathError{Op: "remove", Path: path, Err: err}}
				}
			}
			return nil
		}
	},
}
