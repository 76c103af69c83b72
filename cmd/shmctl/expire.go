package main

import (
	"flag"

	"github.com/shmzone/shmzone/dict"
)

var expireCmd = &command{
	name:    "expire",
	args:    "ZONE KEY TTL",
	summary: "set the time a key has left",
	help: `Expire sets KEY to expire TTL from now: a duration such as 30s or 1m, or
whole seconds; 0 makes it never expire. It exits 1 when KEY is absent or
expired (an expired key is not brought back).`,
	min: 3, max: 3,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		return func(e *env, args []string) error {
			ttl, err := parseTTL(args[2])
			if err != nil {
				return err
			}
			d, err := e.openWrite(args[0], dict.Options{})
			if err != nil {
				return err
			}
			defer d.Close()
			return keyError(args[1], d.Expire(args[1], ttl))
		}
	},
}
