package main

import (
	"flag"

	"github.com/shmzone/shmzone/dict"
)

var dumpCmd = &command{
	name:    "dump",
	args:    "ZONE",
	summary: "write every key as JSON lines",
	help: `Dump writes every live key of a zone to stdout, one JSON object a line:

  {"key":"hits","kind":"int","value":42,"flags":0,"ttl_ms":0}
  {"key":"blob","kind":"bytes","value_b64":"AP8=","flags":3,"ttl_ms":59000}
  {"key":"q","kind":"list","value":[{"kind":"int","value":1}],"flags":0,"ttl_ms":0}

kind is bytes, int, float, bool or list; bytes that are not UTF-8 are in
value_b64, a key that is not in key_b64; a float JSON cannot hold is a
string ("NaN", "+Inf"); ttl_ms is the time left, 0 for never. Within a
shard the oldest entries come first, so that restore (which reads these
lines back, into a zone of any size) keeps their eviction order. Dump opens
the zone read-only: lists are read, not popped.

The zone's registry records come first, one a line. The limiters keep
their live numbers there. A record line has a key and 5 words, each in 16
hex digits:

  {"record":"9c1f0a2b3d4e5f60","words":["0000000000000064",...]}

A dump of a zone with no records has no record lines. A restore older than
record lines refuses them.`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		fs.Bool("json", true, "accepted for symmetry with the other read verbs: dump always writes JSON lines")
		return func(e *env, args []string) error {
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			recs, err := d.Records()
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := writeJSON(e.stdout, newJSONRecord(r), false); err != nil {
					return err
				}
			}
			var werr error
			err = d.Scan(func(it dict.Item) bool {
				werr = writeJSON(e.stdout, itemOf(it).json(true), false)
				return werr == nil
			})
			if werr != nil {
				return werr
			}
			return err
		}
	},
}
