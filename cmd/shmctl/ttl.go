package main

import (
	"flag"
	"fmt"
)

var ttlCmd = &command{
	name:    "ttl",
	args:    "ZONE KEY",
	summary: "print the time a key has left",
	help: `TTL prints the time KEY has left, such as 9.5s, or "never". It exits 1 when
KEY is absent or expired. It opens the zone read-only.`,
	min: 2, max: 2,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, `print JSON: {"key": KEY, "ttl_ms": N}, where 0 means never`)
		return func(e *env, args []string) error {
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			ttl, err := d.TTL(args[1])
			if err != nil {
				return keyError(args[1], err)
			}
			if *asJSON {
				return writeJSON(e.stdout, jsonTTL{newJSONKey(args[1]), ttl.Milliseconds()}, true)
			}
			_, err = fmt.Fprintln(e.stdout, humanTTL(ttl))
			return err
		}
	},
}
