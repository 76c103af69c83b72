package limiter

import (
	"errors"
	"fmt"

	"github.com/shmzone/shmzone/dict"
)

// Dry runs. A limiter in a dry run decides and commits as usual. The
// middleware over it lets every request through, and counts each
// rejection it let through in the zone. The count is a dict number under
// the zone key "meta|dryrun|kind|name". No limiter's kind is "dryrun", so
// Settings and Clients pass it over. An operator switches a dry run on
// and off live, per limiter, in the registry record of its live numbers
// (DESIGN.md, section 12).

// dryRunKey returns the zone key of the dry-run count of the limiter of
// kind named name.
func dryRunKey(kind, name string) string {
	return metaKind + "|dryrun|" + kind + "|" + name
}

// addDryRun adds n to the limiter's dry-run count in the zone.
func (t *tuned[N]) addDryRun(n int64) error {
	if n < 1 {
		return fmt.Errorf("%w: %d", ErrBadCost, n)
	}
	if _, _, err := t.d.IncrInit(t.dryKey, n, 0, 0); err != nil {
		return fmt.Errorf("limiter: count a dry run of %s %q: %w", t.kind, t.name, err)
	}
	return nil
}

// setDryRun switches the limiter's live dry run on or off.
func (t *tuned[N]) setDryRun(on bool) error {
	return t.set(live{set: liveDryRun, dry: on})
}

// DryRunRejectedOf returns the dry-run count of the limiter of kind named
// name in d: the rejections a dry run let through, in every process. It
// is 0 when d holds no count. d may be a read-only view.
//
// DryRunRejectedOf returns the errors of d.Get, but ErrNotFound.
func DryRunRejectedOf(d *dict.Dict, kind, name string) (int64, error) {
	v, _, err := d.Get(dryRunKey(kind, name))
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return v.Int(), nil
}

// SetDryRun switches a dry run on or off live, for every process of the
// zone. A middleware over l then lets every request through, and counts
// those l rejects. The next decision of each process sees the switch.
// UnsetLive drops it with the live numbers.
//
// SetDryRun returns the errors of SetRate but ErrBadRate.
func (l *Req) SetDryRun(on bool) error { return l.tune.setDryRun(on) }

// DryRun reports whether a live dry run is in force. It costs one atomic
// load when nothing changed.
func (l *Req) DryRun() bool { return l.tune.dryRun() }

// AddDryRunRejected adds n to l's dry-run count in its zone. A middleware
// calls it for each rejection a dry run lets through.
//
// AddDryRunRejected returns ErrBadCost for n below 1, and the errors of
// dict's IncrInit. A zone without room, or a count lost to eviction, is
// an error.
func (l *Req) AddDryRunRejected(n int64) error { return l.tune.addDryRun(n) }

// DryRunRejected returns l's dry-run count in its zone: the rejections a
// dry run let through, in every process.
//
// DryRunRejected returns the errors of DryRunRejectedOf.
func (l *Req) DryRunRejected() (int64, error) {
	return DryRunRejectedOf(l.tune.d, l.tune.kind, l.tune.name)
}

// SetDryRun is Req's SetDryRun.
func (l *Count) SetDryRun(on bool) error { return l.tune.setDryRun(on) }

// DryRun is Req's DryRun.
func (l *Count) DryRun() bool { return l.tune.dryRun() }

// AddDryRunRejected is Req's AddDryRunRejected.
func (l *Count) AddDryRunRejected(n int64) error { return l.tune.addDryRun(n) }

// DryRunRejected is Req's DryRunRejected.
func (l *Count) DryRunRejected() (int64, error) {
	return DryRunRejectedOf(l.tune.d, l.tune.kind, l.tune.name)
}

// SetDryRun is Req's SetDryRun.
func (l *SlidingWindow) SetDryRun(on bool) error { return l.tune.setDryRun(on) }

// DryRun is Req's DryRun.
func (l *SlidingWindow) DryRun() bool { return l.tune.dryRun() }

// AddDryRunRejected is Req's AddDryRunRejected.
func (l *SlidingWindow) AddDryRunRejected(n int64) error { return l.tune.addDryRun(n) }

// DryRunRejected is Req's DryRunRejected.
func (l *SlidingWindow) DryRunRejected() (int64, error) {
	return DryRunRejectedOf(l.tune.d, l.tune.kind, l.tune.name)
}

// SetDryRun is Req's SetDryRun.
func (l *GCRA) SetDryRun(on bool) error { return l.tune.setDryRun(on) }

// DryRun is Req's DryRun.
func (l *GCRA) DryRun() bool { return l.tune.dryRun() }

// AddDryRunRejected is Req's AddDryRunRejected.
func (l *GCRA) AddDryRunRejected(n int64) error { return l.tune.addDryRun(n) }

// DryRunRejected is Req's DryRunRejected.
func (l *GCRA) DryRunRejected() (int64, error) {
	return DryRunRejectedOf(l.tune.d, l.tune.kind, l.tune.name)
}

// SetDryRun is Req's SetDryRun.
func (c *Conn) SetDryRun(on bool) error { return c.tune.setDryRun(on) }

// DryRun is Req's DryRun.
func (c *Conn) DryRun() bool { return c.tune.dryRun() }

// AddDryRunRejected is Req's AddDryRunRejected.
func (c *Conn) AddDryRunRejected(n int64) error { return c.tune.addDryRun(n) }

// DryRunRejected is Req's DryRunRejected.
func (c *Conn) DryRunRejected() (int64, error) {
	return DryRunRejectedOf(c.tune.d, c.tune.kind, c.tune.name)
}
