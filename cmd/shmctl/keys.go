package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/shmzone/shmzone/dict"
)

var keysCmd = &command{
	name:    "keys",
	args:    "ZONE",
	summary: "list the live keys",
	help: `Keys lists the live keys of a zone, sorted bytewise, one a line; a key that
is not plain printable text is quoted in Go syntax. --long adds each key's
kind, flags and TTL. Keys opens the zone read-only.`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print a JSON array of {key, kind, flags, ttl_ms}")
		long := fs.Bool("long", false, "print each key's kind, flags and TTL too")
		prefix := fs.String("prefix", "", "list only the keys that start with this")
		limit := fs.Int("limit", 0, "list at most this many keys, the first in sorted order; 0 = all")
		return func(e *env, args []string) error {
			if *limit < 0 {
				return usagef("bad --limit %d", *limit)
			}
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			items, err := scanItems(d, func(k string) bool { return strings.HasPrefix(k, *prefix) })
			if err != nil {
				return err
			}
			if *limit > 0 && len(items) > *limit {
				items = items[:*limit]
			}
			if *asJSON {
				out := make([]jsonItem, len(items))
				for i, it := range items {
					out[i] = it.json(false)
				}
				return writeJSON(e.stdout, out, true)
			}
			if !*long {
				for _, it := range items {
					fmt.Fprintln(e.stdout, humanKey(it.key))
				}
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tKIND\tFLAGS\tTTL")
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", humanKey(it.key), it.kind(), it.flags, humanTTL(it.ttl))
			}
			return tw.Flush()
		}
	},
}

// scanItems returns the live keys that keep selects, sorted, with their
// kinds, flags and TTLs but not their bytes or elements.
func scanItems(d *dict.Dict, keep func(key string) bool) ([]item, error) {
	var items []item
	err := d.Scan(func(di dict.Item) bool {
		if keep(di.Key) {
			it := itemOf(di)
			if it.value.Kind() == dict.KindBytes {
				it.value = dict.Bytes(nil) // the bytes alias Scan's buffer
			}
			it.list = nil
			items = append(items, it)
		}
		return true
	})
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	return items, err
}
