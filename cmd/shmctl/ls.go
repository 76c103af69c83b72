package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

var lsCmd = &command{
	name:    "ls",
	args:    "[DIR]",
	summary: "list the zones in a folder with their size and keys",
	help: `Ls lists the zone files (NAME.zone) in DIR, by default $SHMZONE_DIR or
/dev/shm, sorted by name, with their size, free space, entries and shards. A
file that cannot be opened as a zone is listed with the reason. Ls opens each
zone read-only. A name that is not printable text is quoted, as keys are.`,
	min: 0, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print a JSON array of {name, path, size, free, entries, shards} or {name, path, error}; a name or path that is not UTF-8 is in name_b64 or path_b64 instead, in base64")
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
				js := make([]jsonZone, len(zones))
				for i, z := range zones {
					js[i] = z.json()
				}
				return writeJSON(e.stdout, js, true)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSIZE\tFREE\tENTRIES\tSHARDS")
			for _, z := range zones {
				if z.err != "" {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(%s)\n", humanKey(z.name), printable(z.err))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", humanKey(z.name), formatSize(z.Size), formatSize(z.Free), z.Entries, z.Shards)
			}
			return tw.Flush()
		}
	},
}

// zoneEntry is one zone of ls: its figures, or why it did not open. Its
// name and path are the file's, any bytes.
type zoneEntry struct {
	name, path string
	*zoneFigures
	err string // "" when it opened
}

// jsonZone is a zoneEntry in JSON. As a key is (jsonKey), a name or path
// that is not UTF-8, which JSON would turn into U+FFFD and so name no file,
// is in name_b64 or path_b64, in base64, instead of name or path.
type jsonZone struct {
	Name    string `json:"name,omitempty"`
	NameB64 string `json:"name_b64,omitempty"`
	Path    string `json:"path,omitempty"`
	PathB64 string `json:"path_b64,omitempty"`
	*zoneFigures
	Error string `json:"error,omitempty"`
}

func (z zoneEntry) json() jsonZone {
	j := jsonZone{zoneFigures: z.zoneFigures, Error: z.err}
	j.Name, j.NameB64 = textOrB64(z.name)
	j.Path, j.PathB64 = textOrB64(z.path)
	return j
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
		z := zoneEntry{name: name, path: filepath.Join(dir, f.Name())}
		if !strings.ContainsRune(z.path, '/') {
			z.path = "./" + z.path // a path, not a name to resolve
		}
		d, err := e.openRead(z.path)
		if err != nil {
			z.err = reason(err)
		} else {
			st := d.Stats()
			z.zoneFigures = &zoneFigures{st.Capacity, st.FreeSpace, st.Entries, st.Shards}
			d.Close()
		}
		zones = append(zones, z)
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].name < zones[j].name })
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

// printable returns s as it is when it is UTF-8 text with no control codes,
// quoted otherwise: a message that may hold a file's name, for a terminal.
func printable(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
