package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/shmzone/shmzone/dict"
)

var infoCmd = &command{
	name:    "info",
	args:    "ZONE",
	summary: "print a zone's size, free space, keys and counters",
	help: `Info prints a zone's size and geometry, its free space, its entries, the
counters every process adds to (hits, misses, writes, evictions, lost,
expirations, lock waits, recoveries, moves: since the zone was created),
and the use of each slab size class. Stranded is the part of the free
space in slab pages that also hold entries: room only for entries of
their size class. Held pages counts the pages that open processes fill
for their own entries: at most three with room per process, size class
and shard. Moves counts the entries a process moved, after writing them, from
pages another process filled to pages of its own. Protected counts the
entries used again, which
eviction takes only when no other is left; lost counts keys written anew
while their evicted entry would still have been live (a count that errs
low: a shard remembers its last 16 evictions), and a zone whose lost grows
is too small for the keys in use. --shards adds a line per shard. A zone
path that is not printable text is quoted, as keys are. Info opens the
zone read-only.`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print JSON; a zone path that is not UTF-8 is in zone_b64 instead of zone, in base64")
		shards := fs.Bool("shards", false, "also print each shard's figures")
		return func(e *env, args []string) error {
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			r := newInfo(d, *shards)
			if *asJSON {
				return writeJSON(e.stdout, r, true)
			}
			return r.write(e.stdout)
		}
	},
}

// jsonStats are a dictionary's figures, for info and watch.
type jsonStats struct {
	Free        int64  `json:"free"`
	Stranded    int64  `json:"stranded"`   // free bytes in slab pages that also hold entries
	HeldPages   int64  `json:"held_pages"` // slab pages open processes fill for their own entries
	Entries     int64  `json:"entries"`
	Protected   int64  `json:"protected"` // entries in the eviction queue's protected segment
	Hits        uint64 `json:"hits"`
	Misses      uint64 `json:"misses"`
	Writes      uint64 `json:"writes"`
	Evictions   uint64 `json:"evictions"`
	Lost        uint64 `json:"lost"`
	Expirations uint64 `json:"expirations"`
	LockWaits   uint64 `json:"lock_waits"`
	Recoveries  uint64 `json:"recoveries"`
	Moves       uint64 `json:"moves"` // entries moved to the pages of the process that writes them
}

func statsOf(st dict.Stats) jsonStats {
	return jsonStats{
		Free: st.FreeSpace, Stranded: st.StrandedBytes, HeldPages: st.HeldPages, Entries: st.Entries, Protected: st.Protected, Hits: st.Hits, Misses: st.Misses,
		Writes: st.Writes, Evictions: st.Evictions, Lost: st.Lost, Expirations: st.Expirations, LockWaits: st.LockWaits, Recoveries: st.Recoveries,
		Moves: st.Moves,
	}
}

// counters returns the counters with their names for people, in order.
func (s jsonStats) counters() []struct {
	name string
	n    uint64
} {
	return []struct {
		name string
		n    uint64
	}{
		{"hits", s.Hits}, {"misses", s.Misses}, {"writes", s.Writes}, {"evictions", s.Evictions},
		{"lost", s.Lost}, {"expirations", s.Expirations}, {"lock waits", s.LockWaits}, {"recoveries", s.Recoveries},
		{"moves", s.Moves},
	}
}

// info is what info reports.
type info struct {
	path string // the zone's file, any bytes
	// Zone is path when it is UTF-8; else ZoneB64 is, in base64, as a key
	// is (jsonKey).
	Zone       string `json:"zone,omitempty"`
	ZoneB64    string `json:"zone_b64,omitempty"`
	Size       int64  `json:"size"`
	Shards     int    `json:"shards"`
	ShardSize  int64  `json:"shard_size"`
	IndexSlots int    `json:"index_slots"` // per shard
	PageSize   int    `json:"page_size"`
	jsonStats
	// Classes are the slab size classes in use; the row of Size 0 counts
	// page runs (entries larger than half a page): Used runs of Pages pages.
	Classes  []jsonClass `json:"classes"`
	PerShard []jsonShard `json:"per_shard,omitempty"`
}

type jsonClass struct {
	Size  int `json:"size"`
	Pages int `json:"pages"`
	Used  int `json:"used"`
	Free  int `json:"free"`
}

type jsonShard struct {
	Shard int `json:"shard"`
	jsonStats
}

func newInfo(d *dict.Dict, perShard bool) info {
	h := d.Header()
	r := info{
		path: d.Path(), Size: h.Size, Shards: h.Shards, ShardSize: h.ShardSize,
		IndexSlots: h.IndexSize, PageSize: h.PageSize, jsonStats: statsOf(d.Stats()),
		Classes: []jsonClass{},
	}
	r.Zone, r.ZoneB64 = textOrB64(r.path)
	for _, c := range d.SlabStats() {
		r.Classes = append(r.Classes, jsonClass(c))
	}
	for i := 0; perShard && i < h.Shards; i++ {
		r.PerShard = append(r.PerShard, jsonShard{i, statsOf(d.ShardStats(i))})
	}
	return r
}

func (r info) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "zone\t%s\n", humanKey(r.path))
	fmt.Fprintf(tw, "size\t%s (%d bytes): %d shard(s) of %s, %d index slots each\n",
		formatSize(r.Size), r.Size, r.Shards, formatSize(r.ShardSize), r.IndexSlots)
	fmt.Fprintf(tw, "free\t%s (%d bytes)\n", formatSize(r.Free), r.Free)
	fmt.Fprintf(tw, "stranded\t%s (%d bytes) of it in pages in use, for entries of their size class\n", formatSize(r.Stranded), r.Stranded)
	fmt.Fprintf(tw, "held pages\t%d (filled by open processes for their own entries)\n", r.HeldPages)
	fmt.Fprintf(tw, "entries\t%d (expired ones not yet reclaimed included)\n", r.Entries)
	fmt.Fprintf(tw, "protected\t%d (used again: evicted last)\n", r.Protected)
	for _, c := range r.counters() {
		fmt.Fprintf(tw, "%s\t%d\n", c.name, c.n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\nslab class\tpages\tused\tfree\t\n")
	for _, c := range r.Classes {
		if c.Size == 0 {
			fmt.Fprintf(tw, "page runs\t%d\t%d\t-\t\n", c.Pages, c.Used)
			continue
		}
		fmt.Fprintf(tw, "%d B\t%d\t%d\t%d\t\n", c.Size, c.Pages, c.Used, c.Free)
	}
	if len(r.PerShard) > 0 {
		fmt.Fprint(tw, "\nshard\tentries\tprotected\tfree\tstranded\theld pages\thits\tmisses\twrites\tevictions\tlost\texpirations\tlock waits\trecoveries\tmoves\t\n")
		for _, s := range r.PerShard {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t", s.Shard, s.Entries, s.Protected, s.Free, s.Stranded, s.HeldPages)
			for _, c := range s.counters() {
				fmt.Fprintf(tw, "%d\t", c.n)
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}
