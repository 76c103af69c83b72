package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

var checkCmd = &command{
	name:    "check",
	args:    "ZONE",
	summary: "verify a zone's invariants; --repair rebuilds broken shards",
	help: `Check verifies every shard of a zone: its slab, its index, its eviction
queue, its lists, that no write was left half done, and that no shard's lock
is held by a process that is gone. It exits 0 when the
zone is sound, and 1 with the problems listed otherwise. It opens the zone
read-only, so a zone that other processes write at the same time may show a
write in progress as a problem: check again.

--repair opens the zone read-write and rebuilds each broken shard from its
entries, as recovery from a process killed holding a lock does (an entry
being written then is lost), then checks again. A zone whose header is
corrupt cannot be repaired.`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, `print JSON: {"zone", "ok", "repaired", "problems"}`)
		repair := fs.Bool("repair", false, "rebuild the shards that fail the check, then check again")
		return func(e *env, args []string) error {
			r, err := runCheck(e, args[0], *repair)
			if err != nil {
				return err
			}
			if *asJSON {
				err = writeJSON(e.stdout, r, true)
			} else {
				r.write(e)
			}
			if err == nil && !r.OK {
				err = errProblems
			}
			return err
		}
	},
}

// checkReport is what check found.
type checkReport struct {
	Zone     string   `json:"zone"`
	OK       bool     `json:"ok"`
	Repaired *int     `json:"repaired,omitempty"` // shards rebuilt, with --repair
	Problems []string `json:"problems"`
	header   bool     // the zone's header is corrupt: nothing to repair from
}

func runCheck(e *env, name string, repair bool) (checkReport, error) {
	r := checkReport{Zone: shm.Path(name), Problems: []string{}}
	var d *dict.Dict
	var err error
	if repair {
		d, err = e.openWrite(name, dict.Options{})
	} else {
		d, err = e.openRead(name)
	}
	if zoneExitCode(err) == exitCorrupt { // found before any shard could be read
		p := strings.ReplaceAll(problem(errors.Unwrap(err)), r.Zone+": ", "")
		r.Problems = append(r.Problems, p)
		r.header = !strings.HasPrefix(p, "dict: ")
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer d.Close()
	if repair {
		n, err := d.Repair()
		if err != nil {
			return r, err
		}
		r.Repaired = &n
	}
	if err := d.Check(); err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, p := range j.Unwrap() {
				r.Problems = append(r.Problems, problem(p))
			}
		} else {
			r.Problems = append(r.Problems, problem(err))
		}
	}
	r.OK = len(r.Problems) == 0
	return r, nil
}

// problem is an error's text without the corruption sentinel's.
func problem(err error) string {
	return strings.Replace(err.Error(), dict.ErrCorrupt.Error()+": ", "", 1)
}

func (r checkReport) write(e *env) {
	if r.Repaired != nil {
		fmt.Fprintf(e.stdout, "repaired %d shard(s)\n", *r.Repaired)
	}
	if r.OK {
		fmt.Fprintf(e.stdout, "%s: sound\n", r.Zone)
		return
	}
	fmt.Fprintf(e.stdout, "%s: %d problem(s):\n", r.Zone, len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(e.stdout, "  %s\n", p)
	}
	switch {
	case r.header:
		fmt.Fprintln(e.stdout, "the zone's header is corrupt and cannot be repaired: rm the zone and restore an earlier dump")
	case r.Repaired == nil:
		fmt.Fprintln(e.stdout, "shmctl check --repair rebuilds the broken shards from their entries")
	}
}
