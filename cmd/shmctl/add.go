package main

import (
	"flag"

	"github.com/shmzone/shmzone/dict"
)

var addCmd = &command{
	name:    "add",
	args:    "ZONE KEY VALUE",
	summary: "store a value under a key that holds none",
	help: `Add is set for an absent key only: it exits 1, and changes nothing, when
KEY holds a live value or a list. An expired key counts as absent.`,
	min: 3, max: 3,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		w := defineWriteFlags(fs)
		return func(e *env, args []string) error {
			return w.store(e, args, (*dict.Dict).Add, (*dict.Dict).SafeAdd)
		}
	},
}
