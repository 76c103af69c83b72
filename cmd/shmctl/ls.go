package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

var lsCmd = &command{
	name:    "ls",
	args:    "[DIR]",
	summary: "list the zones in a folder with their size and keys",
	help: `Ls lists the zone files (NAME.zone) in DIR, by default $SHMZONE_DIR or
/dev/shm, sorted by name, with their size, free space, entries and shards. A
file that cannot be opened as a zone is listed with the reason. Ls opens each
zone read-only.`,
	min: 0, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print a JSON array of {name, path, size, free, entries, shards} or {name, path, error}")
		return func(e *env, args []string) error {
			dir := zoneDir()
			if len(args) == 1 {
				dir = args[0]
			}
			zones, err := listZones(e, dir)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(e.stdout, zones, true)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tFREE\tENTRIES\tSHARDS")
			for _, z := range zones {
				if z.Error != "" {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(%s)\n", z.Name, z.Error)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", z.Name, formatSize(z.Size), formatSize(z.Free), z.Entries, z.Shards)
			}
			return tw.Flush()
		}
	},
}

// zoneEntry is one zone of ls: its figures, or why it did not open.
type zoneEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	*zoneFigures
	Error string `json:"error,omitempty"`
}

type zoneFigures struct {
	Size    int64 `json:"size"`
	Free    int64 `json:"free"`
	Entries int64 `json:"entries"`
	Shards  int   `json:"shards"`
}

// listZones opens each NAME.zone of dir read-only, in name order.
func listZones(e *env, dir string) ([]zoneEntry, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	zones := []zoneEntry{}
	for _, f := range files {
		name, ok := strings.CutSuffix(f.Name(), ".zone")
		if !ok || name == "" {
			continue
		}
		z := zoneEntry{Name: name, Path: filepath.Join(dir, f.Name())}
		if !strings.ContainsRune(z.Path, '/') {
			z.Path = "./" + z.Path // a path, not a name to resolve
		}
		d, err := e.openRead(z.Path)
		if err != nil {
			z.Error = reason(err)
		} else {
			st := d.Stats()
			z.zoneFigures = &zoneFigures{st.Capacity, st.FreeSpace, st.Entries, st.Shards}
			d.Close()
		}
		zones = append(zones, z)
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].Name < zones[j].Name })
	return zones, nil
}

// reason says in a few words why a zone did not open.
func reason(err error) string {
	switch zoneExitCode(err) {
	case exitNoZone:
		return "gone"
	case exitNotZone:
		return "not a zone"
	case exitVersion:
		return "incompatible version"
	case exitCorrupt:
		return "corrupt"
	case exitPerm:
		return "permission denied"
	}
	return err.Error()
}
