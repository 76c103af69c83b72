package main

import (
	"flag"

	"github.com/shmzone/shmzone/dict"
)

var delCmd = &command{
	name:    "del",
	args:    "ZONE KEY...",
	summary: "delete keys",
	help: `Del deletes each KEY with its value or list. Deleting an absent key is
not an error.`,
	min: 2, max: -1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		return func(e *env, args []string) error {
			d, err := e.openWrite(args[0], dict.Options{})
			if err != nil {
				return err
			}
			defer d.Close()
			for _, key := range args[1:] {
				if err := d.Delete(key); err != nil {
					return keyError(key, err)
				}
			}
			return nil
		}
	},
}
