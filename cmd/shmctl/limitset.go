package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// limitSetFlags are the flags of "limits set".
type limitSetFlags struct {
	kind   *string
	rate   *string
	burst  *float64
	limit  *int64
	conn   *int64
	window *time.Duration
	dryRun *string
}

func defineLimitSetFlags(fs *flag.FlagSet) *limitSetFlags {
	return &limitSetFlags{
		kind:   fs.String("kind", "", "set: the limiter's kind (req, count, conn, lconn, sw, gcra), when its name alone is ambiguous or unknown"),
		rate:   fs.String("rate", "", "set: a Req's or GCRA's rate, as 20r/s or 600r/m"),
		burst:  fs.Float64("burst", -1, "set: a Req's, GCRA's or Conn's burst"),
		limit:  fs.Int64("limit", 0, "set: a Count's or SlidingWindow's limit per window"),
		conn:   fs.Int64("conn", 0, "set: a Conn's max requests at once"),
		window: fs.Duration("window", 0, "set: a Count's window, for the windows that open after the change"),
		dryRun: fs.String("dry-run", "", "set: on or off, a dry run of any limiter: its middleware lets every request through and counts those it would reject"),
	}
}

// any reports whether a flag of set was given.
func (f *limitSetFlags) any() bool {
	return *f.rate != "" || *f.burst >= 0 || *f.limit != 0 || *f.conn != 0 || *f.window != 0 || *f.dryRun != ""
}

// numbers returns the numbers the flags set, for a limiter of kind.
func (f *limitSetFlags) numbers(kind string) (limiter.Numbers, limiter.Fields, error) {
	var n limiter.Numbers
	var set limiter.Fields
	rated := kind == "req" || kind == "gcra"
	counted := kind == "count" || kind == "sw"
	conn := kind == "conn" || kind == "lconn"
	if *f.rate != "" {
		if !rated {
			return n, 0, usagef("--rate is for a req or a gcra, not a %s", kind)
		}
		r, err := limiter.ParseRate(*f.rate)
		if err != nil {
			return n, 0, usagef("%v", err)
		}
		n.Rate, set = r, set|limiter.FieldRate
	}
	if *f.burst >= 0 {
		if counted {
			return n, 0, usagef("--burst is for a req, a gcra or a conn, not a %s", kind)
		}
		n.Burst, set = *f.burst, set|limiter.FieldBurst
	}
	if *f.limit != 0 {
		if !counted {
			return n, 0, usagef("--limit is for a count or a sw, not a %s", kind)
		}
		n.Limit, set = *f.limit, set|limiter.FieldLimit
	}
	if *f.conn != 0 {
		if !conn {
			return n, 0, usagef("--conn is for a conn or an lconn, not a %s", kind)
		}
		n.Limit, set = *f.conn, set|limiter.FieldLimit
	}
	if *f.window != 0 {
		if kind != "count" {
			return n, 0, usagef("--window is for a count, not a %s", kind)
		}
		n.Window, set = *f.window, set|limiter.FieldWindow
	}
	switch *f.dryRun {
	case "":
	case "on", "off":
		n.DryRun, set = *f.dryRun == "on", set|limiter.FieldDryRun
	default:
		return n, 0, usagef("bad --dry-run %q: want on or off", *f.dryRun)
	}
	if set == 0 {
		return n, 0, usagef("limits set: nothing to set: give --rate, --burst, --limit, --conn, --window or --dry-run")
	}
	return n, set, nil
}

// kindOf returns the kind of the limiter named name in d: kind when given,
// else the one kind d knows of that name.
func kindOf(d *dict.Dict, name, kind string) (string, error) {
	if kind != "" {
		return kind, nil
	}
	kinds := limiter.KindsOf(d, name)
	switch len(kinds) {
	case 0:
		return "", usagef("the zone knows no limiter named %q: give its --kind", name)
	case 1:
		return kinds[0], nil
	}
	return "", usagef("limiters of kinds %s are named %q: give --kind", strings.Join(kinds, ", "), name)
}

// limitsSet is "limits set ZONE NAME": it sets live numbers.
func limitsSet(e *env, f *limitSetFlags, zone, name string) error {
	d, err := e.openWrite(zone, dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	kind, err := kindOf(d, name, *f.kind)
	if err != nil {
		return err
	}
	n, set, err := f.numbers(kind)
	if err != nil {
		return err
	}
	if err := limiter.SetLive(d, kind, name, n, set); err != nil {
		if isBadNumber(err) {
			return usagef("%v", err)
		}
		return err
	}
	return nil
}

// isBadNumber reports whether err refuses a number the operator gave.
func isBadNumber(err error) bool {
	for _, e := range []error{limiter.ErrBadRate, limiter.ErrBadBurst, limiter.ErrBadLimit, limiter.ErrBadWindow, limiter.ErrBadName} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// limitsUnset is "limits unset ZONE NAME": it drops live numbers. A
// limiter without them is exit 1.
func limitsUnset(e *env, kind, zone, name string) error {
	d, err := e.openWrite(zone, dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	kind, err = kindOf(d, name, kind)
	if err != nil {
		return err
	}
	ok, err := limiter.UnsetLive(d, kind, name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s %q has no live numbers: %w", kind, name, dict.ErrNotFound)
	}
	return nil
}

// settingRow is one limiter of "limits show".
type settingRow struct {
	Kind    string  `json:"kind"`
	Name    string  `json:"name"`
	InForce string  `json:"in_force"`
	From    string  `json:"from"`               // live, built or unknown
	Pid     int     `json:"pid,omitempty"`      // who set or built the numbers in force; a first construction records none
	At      string  `json:"at,omitempty"`       // when, RFC 3339
	Built   *string `json:"built,omitempty"`    // the built numbers, when live ones hide them
	BuiltBy int     `json:"built_by,omitempty"` // the builder's pid
	DryRun  bool    `json:"dry_run"`            // a live dry run is in force
	// DryRunRejected counts the requests a dry run let through that the
	// limiter rejected, in every process.
	DryRunRejected int64 `json:"dry_run_rejected"`
}

// limitsShow is "limits show ZONE": the numbers of each limiter.
func limitsShow(e *env, zone, name string, asJSON bool) error {
	d, err := e.openRead(zone)
	if err != nil {
		return err
	}
	defer d.Close()
	ss, err := limiter.Settings(d)
	if err != nil {
		return err
	}
	slices.SortFunc(ss, func(a, b limiter.Setting) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	rows := []settingRow{}
	for _, s := range ss {
		if name != "" && s.Name != name {
			continue
		}
		rows = append(rows, newSettingRow(s))
	}
	if asJSON {
		return writeJSON(e.stdout, rows, true)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tIN FORCE\tFROM\tPID\tAT\tBUILT\tDRY RUN\tDRY-RUN REJECTED")
	for _, r := range rows {
		built, pid, at := "-", "-", cmp.Or(r.At, "-")
		if r.Built != nil {
			built = *r.Built
			if r.BuiltBy != 0 {
				built += fmt.Sprintf(" (pid %d)", r.BuiltBy)
			}
		}
		if r.Pid != 0 {
			pid = fmt.Sprint(r.Pid)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Kind, humanKey(r.Name), r.InForce, r.From, pid, at, built, onOff(r.DryRun), r.DryRunRejected)
	}
	return tw.Flush()
}

func newSettingRow(s limiter.Setting) settingRow {
	r := settingRow{Kind: s.Kind, Name: s.Name, InForce: describeNumbers(s.Kind, s.InForce),
		DryRun: s.InForce.DryRun, DryRunRejected: s.DryRunRejected}
	switch {
	case s.LiveFields&^limiter.FieldDryRun != 0:
		r.From, r.Pid, r.At = "live", s.LivePid, s.LiveAt.UTC().Format(time.RFC3339)
		if s.BuiltKnown {
			b := describeNumbers(s.Kind, s.Built)
			r.Built, r.BuiltBy = &b, s.BuiltPid
		}
	case s.BuiltKnown:
		r.From, r.Pid = "built", s.BuiltPid
		if !s.BuiltAt.IsZero() {
			r.At = s.BuiltAt.UTC().Format(time.RFC3339)
		}
	default:
		r.From = "unknown"
	}
	return r
}

// onOff says whether a dry run is on.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// describeNumbers says a limiter's numbers as its kind takes them.
func describeNumbers(kind string, n limiter.Numbers) string {
	switch kind {
	case "req", "gcra":
		return fmt.Sprintf("rate %vr/s, burst %v", n.Rate, n.Burst)
	case "count", "sw":
		return fmt.Sprintf("limit %d per %v", n.Limit, n.Window)
	case "conn", "lconn":
		return fmt.Sprintf("max %d, burst %v", n.Limit, n.Burst)
	}
	var parts []string
	if n.Rate != 0 {
		parts = append(parts, fmt.Sprintf("rate %vr/s", n.Rate))
	}
	if n.Limit != 0 {
		parts = append(parts, fmt.Sprintf("limit %d", n.Limit))
	}
	if n.Burst != 0 {
		parts = append(parts, fmt.Sprintf("burst %v", n.Burst))
	}
	if n.Window != 0 {
		parts = append(parts, fmt.Sprintf("window %v", n.Window))
	}
	return strings.Join(parts, ", ")
}
