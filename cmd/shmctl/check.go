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
read-only and checks a copy of each shard taken between two changes, so a
zone that other processes write at the same time shows only the problems it
has. A shard that a live process keeps locked, or that changes under every
copy, for the lock timeout (1s) is not checked: it is listed as busy, and
check exits 9 when it found no problem elsewhere.

--repair opens the zone read-write and rebuilds each broken shard from its
entries, as recovery from a process killed holding a lock does (an entry
being written then is lost), then checks again. Opening the zone
read-write may itself rebuild a shard whose slab header is corrupt; check
says so. A zone whose header is corrupt cannot be repaired, nor one that
does not open read-write.`,
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
			switch {
			case err != nil:
			case len(r.Problems) > 0:
				err = errProblems
			case r.busy != nil:
				err = fmt.Errorf("%d shard(s) not checked: %w", len(r.Busy), r.busy)
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
	Busy     []string `json:"busy,omitempty"` // shards not checked: kept locked or changing
	// RebuiltOnOpen, with --repair, is the problem that kept the zone from
	// opening read-only (a shard's slab header), which opening it
	// read-write rebuilt; Repaired does not count that shard.
	RebuiltOnOpen string `json:"rebuilt_on_open,omitempty"`
	header        bool   // the zone's header is corrupt: nothing to repair from
	unopened      bool   // --repair could not open the zone read-write: it repaired nothing
	busy          error  // the first shard not checked
}

func runCheck(e *env, name string, repair bool) (checkReport, error) {
	r := checkReport{Zone: shm.Path(name), Problems: []string{}}
	var d *dict.Dict
	var err error
	// openProblem is the problem found before any shard could be read,
	// or "": a corrupt header, or a shard's slab header.
	openProblem := func(err error) string {
		if zoneExitCode(err) != exitCorrupt {
			return ""
		}
		return strings.ReplaceAll(problem(errors.Unwrap(err)), r.Zone+": ", "")
	}
	var roProblem string // with --repair, what kept the zone from opening read-only
	if repair {
		// A read-write open may rebuild a shard whose slab header is
		// corrupt, which a read-only one refuses: tell that it did.
		if ro, err := e.openRead(name); err == nil {
			ro.Close()
		} else {
			roProblem = openProblem(err)
		}
		d, err = e.openWrite(name, dict.Options{})
	} else {
		d, err = e.openRead(name)
	}
	if p := openProblem(err); p != "" {
		r.Problems = append(r.Problems, p)
		r.header = !strings.HasPrefix(p, "dict: ")
		r.unopened = repair
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
		r.Repaired, r.RebuiltOnOpen = &n, roProblem
	}
	if err := d.Check(); err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, p := range errs {
			if errors.Is(p, dict.ErrLockTimeout) {
				r.Busy = append(r.Busy, p.Error())
				if r.busy == nil {
					r.busy = p
				}
				continue
			}
			r.Problems = append(r.Problems, problem(p))
		}
	}
	r.OK = len(r.Problems) == 0 && len(r.Busy) == 0
	return r, nil
}

// problem is an error's text without the corruption sentinel's.
func problem(err error) string {
	return strings.Replace(err.Error(), dict.ErrCorrupt.Error()+": ", "", 1)
}

func (r checkReport) write(e *env) {
	switch {
	case r.RebuiltOnOpen != "":
		fmt.Fprintf(e.stdout, "opening the zone read-write rebuilt the shard(s) that kept it from opening read-only:\n  %s\n", r.RebuiltOnOpen)
		fmt.Fprintf(e.stdout, "repaired %d more shard(s)\n", *r.Repaired)
	case r.Repaired != nil:
		fmt.Fprintf(e.stdout, "repaired %d shard(s)\n", *r.Repaired)
	}
	if r.OK {
		fmt.Fprintf(e.stdout, "%s: sound\n", r.Zone)
		return
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(e.stdout, "%s: %d problem(s):\n", r.Zone, len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
	} else {
		fmt.Fprintf(e.stdout, "%s: no problem found in the shards checked\n", r.Zone)
	}
	if len(r.Busy) > 0 {
		fmt.Fprintf(e.stdout, "%d shard(s) busy, not checked:\n", len(r.Busy))
		for _, b := range r.Busy {
			fmt.Fprintf(e.stdout, "  %s\n", b)
		}
	}
	switch {
	case len(r.Problems) == 0:
	case r.header:
		fmt.Fprintln(e.stdout, "the zone's header is corrupt and cannot be repaired: rm the zone and restore an earlier dump")
	case r.unopened:
		fmt.Fprintln(e.stdout, "check --repair could not open the zone read-write to rebuild it: rm the zone and restore an earlier dump")
	case r.Repaired == nil:
		fmt.Fprintln(e.stdout, "shmctl check --repair rebuilds the broken shards from their entries")
	}
}
