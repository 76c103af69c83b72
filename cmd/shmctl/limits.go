package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

var limitsCmd = &command{
	name:    "limits",
	args:    "ZONE | show ZONE | set ZONE NAME | unset ZONE NAME",
	summary: "list the limiters' clients nearest to their limits; show, set and unset their numbers",
	help: `Limits lists each limiter of package limiter whose state the zone holds, by
kind and name, and its clients nearest to or over their limit first: those
a request would be rejected for now, then those with the fewest requests
left. For each it prints what one more request would get: the requests
left after it, the time until the client is back to its whole allowance,
and the delay a Req or Conn would impose. STATE is over (the request would
be rejected), delayed, ok, unknown, or the error of a key that no limiter
wrote. A limiter's parameters come from the record its constructor leaves
in the zone. A limiter without one is listed with its clients' keys alone,
as unknown. A limiter in a dry run, or with dry-run rejections counted,
gets a line of its own: whether the dry run is on, and the count. Limits
opens the zone read-only.

Limits show lists each limiter's numbers in force, where they come from
and when: "live" numbers an operator set, or "built" ones, the newest
construction's. Live numbers hide the built ones, which BUILT shows.
DRY RUN says whether an operator switched a dry run on. DRY-RUN REJECTED
counts the requests that dry runs let through and the limiter rejected,
in every process. A dry run of Options.DryRun is the process's own and
shows only in that count. It opens the zone read-only.

Limits set sets numbers live for every process of the zone, as the
limiters' setters do: --rate and --burst for a req or gcra, --limit for a
count or sw, --conn and --burst for a conn, --window for a count, and
--dry-run on or off for any. A limiter in a dry run still decides, but its
middleware lets every request through and counts those it would reject.
They win over any construction until limits unset drops them. Each process's
next decision uses them. A count's changed limit applies to its open
windows at once. NAME is found among the limiters the zone knows of;
--kind picks one when the name is ambiguous or unknown. A number the
limiter refuses is exit 2. Limits unset exits 1 for a limiter without
live numbers. A zone named show, set or unset is ./show, ./set, ./unset.`,
	min: 1, max: 3,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		asJSON := fs.Bool("json", false, "print a JSON array of limiters, each with its clients (show: with its numbers)")
		name := fs.String("name", "", "list only the limiters of this name")
		top := fs.Int("top", 10, "list at most this many clients of each limiter; 0 = all")
		sf := defineLimitSetFlags(fs)
		return func(e *env, args []string) error {
			sub, rest := "", args[1:]
			switch args[0] {
			case "show", "set", "unset":
				sub = args[0]
			}
			want := map[string]int{"": 0, "show": 1, "set": 2, "unset": 2}[sub]
			if sub != "" && len(rest) != want || sub == "" && len(rest) != 0 {
				return usagef("limits %s takes %d operands, got %d", sub, want, len(rest))
			}
			if sub != "set" && sf.any() {
				return usagef("--rate, --burst, --limit, --conn, --window and --dry-run are for limits set")
			}
			switch sub {
			case "show":
				return limitsShow(e, rest[0], *name, *asJSON)
			case "set":
				return limitsSet(e, sf, rest[0], rest[1])
			case "unset":
				return limitsUnset(e, *sf.kind, rest[0], rest[1])
			}
			if *top < 0 {
				return usagef("bad --top %d", *top)
			}
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			var ls []*limitRow
			byID := map[string]*limitRow{}
			err = limiter.Clients(context.Background(), d, func(c limiter.Client) error {
				if *name != "" && c.Name != *name {
					return nil
				}
				id := c.Kind + "|" + c.Name
				l := byID[id]
				if l == nil {
					l = &limitRow{Kind: c.Kind, Name: c.Name, Known: c.Known}
					byID[id] = l
					ls = append(ls, l)
				}
				l.all = append(l.all, c)
				return nil
			})
			if err != nil {
				return err
			}
			if err := addDryRuns(d, byID); err != nil {
				return err
			}
			slices.SortFunc(ls, func(a, b *limitRow) int {
				return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
			})
			for _, l := range ls {
				l.rank(*top)
			}
			if *asJSON {
				if ls == nil {
					ls = []*limitRow{}
				}
				return writeJSON(e.stdout, ls, true)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tCLIENT\tREMAINING\tRESET\tDELAY\tSTATE")
			for _, l := range ls {
				for _, c := range l.Clients {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Kind, humanKey(l.Name), humanKey(c.Key),
						c.remaining(), c.duration(c.ResetMs), c.duration(c.DelayMs), c.State)
				}
				if l.More > 0 {
					fmt.Fprintf(tw, "%s\t%s\t(%d more)\t\t\t\t\n", l.Kind, humanKey(l.Name), l.More)
				}
				if l.DryRun || l.DryRunRejected > 0 {
					fmt.Fprintf(tw, "%s\t%s\t(dry run %s, %d rejected)\t\t\t\t\n", l.Kind, humanKey(l.Name), onOff(l.DryRun), l.DryRunRejected)
				}
			}
			return tw.Flush()
		}
	},
}

// limitRow is a limiter of limits, with its clients ranked.
type limitRow struct {
	Kind    string      `json:"kind"`
	Name    string      `json:"name"`
	Known   bool        `json:"known"` // the zone records its parameters
	Clients []clientRow `json:"clients"`
	More    int         `json:"more"` // clients left out by --top
	// DryRun is a live dry run in force. DryRunRejected counts the
	// requests dry runs let through that the limiter rejected.
	DryRun         bool  `json:"dry_run"`
	DryRunRejected int64 `json:"dry_run_rejected"`
	all            []limiter.Client
}

// addDryRuns sets the dry run and its count of each limiter of byID.
func addDryRuns(d *dict.Dict, byID map[string]*limitRow) error {
	if len(byID) == 0 {
		return nil
	}
	ss, err := limiter.Settings(d)
	if err != nil {
		return err
	}
	for _, s := range ss {
		if l := byID[s.Kind+"|"+s.Name]; l != nil {
			l.DryRun, l.DryRunRejected = s.InForce.DryRun, s.DryRunRejected
		}
	}
	return nil
}

// clientRow is one client of limits. Without the limiter's parameters,
// only Key and State are known.
type clientRow struct {
	Key       string `json:"key"`
	State     string `json:"state"` // over, limited, ok, unknown, or the dry run's error
	Remaining *int64 `json:"remaining,omitempty"`
	ResetMs   *int64 `json:"reset_ms,omitempty"`
	DelayMs   *int64 `json:"delay_ms,omitempty"`
	known     bool
}

// rank orders l's clients, those over their limit first, then by the
// fewest remaining, the longest delay, and key; and keeps the first top
// (0: all).
func (l *limitRow) rank(top int) {
	slices.SortFunc(l.all, func(a, b limiter.Client) int {
		return cmp.Or(
			cmp.Compare(errRank(a), errRank(b)),
			cmp.Compare(overRank(a), overRank(b)),
			cmp.Compare(a.Decision.Remaining, b.Decision.Remaining),
			cmp.Compare(b.Decision.Delay, a.Decision.Delay),
			cmp.Compare(a.Key, b.Key))
	})
	n := len(l.all)
	if top > 0 && n > top {
		l.More, n = n-top, top
	}
	l.Clients = make([]clientRow, n)
	for i, c := range l.all[:n] {
		l.Clients[i] = newClientRow(c)
	}
}

// errRank puts the clients whose state failed to read first.
func errRank(c limiter.Client) int {
	if c.Err != nil {
		return 0
	}
	return 1
}

// overRank puts the clients a request would be rejected for before those
// it would be allowed for.
func overRank(c limiter.Client) int {
	if c.Known && !c.Decision.Allowed {
		return 0
	}
	return 1
}

func newClientRow(c limiter.Client) clientRow {
	r := clientRow{Key: c.Key, known: c.Known}
	switch {
	case !c.Known:
		r.State = "unknown"
		return r
	case c.Err != nil:
		r.State = c.Err.Error()
		return r
	case !c.Decision.Allowed:
		r.State = "over"
	case c.Decision.Delay > 0:
		r.State = "delayed"
	default:
		r.State = "ok"
	}
	rem := c.Decision.Remaining
	reset, delay := c.Decision.ResetAfter.Milliseconds(), c.Decision.Delay.Milliseconds()
	r.Remaining, r.ResetMs, r.DelayMs = &rem, &reset, &delay
	return r
}

// remaining formats Remaining for the table: "-" when not known.
func (r clientRow) remaining() string {
	if r.Remaining == nil {
		return "-"
	}
	return fmt.Sprint(*r.Remaining)
}

// duration formats a time in ms for the table: "-" when not known.
func (r clientRow) duration(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return (time.Duration(*ms) * time.Millisecond).String()
}
