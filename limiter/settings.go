package limiter

import (
	"fmt"
	"strings"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Numbers are a limiter's numbers. Each kind uses the fields its
// constructor takes: Rate and Burst for Req and GCRA, Limit and Window for
// Count and SlidingWindow, Limit (max) and Burst for Conn. Every kind
// takes DryRun, which only a live setting sets.
type Numbers struct {
	Rate   float64       // requests per second
	Burst  float64       // requests
	Limit  int64         // requests, or a Conn's max
	Window time.Duration // a Count's or SlidingWindow's window
	DryRun bool          // a live dry run: SetDryRun
}

// Fields says which Numbers a live setting sets.
type Fields uint8

// The fields of Numbers that a live setting may set.
const (
	FieldRate   Fields = liveRate
	FieldLimit  Fields = liveLimit
	FieldBurst  Fields = liveBurst
	FieldWindow Fields = liveWindow
	FieldDryRun Fields = liveDryRun
)

// Setting is one limiter's numbers as its zone holds them.
type Setting struct {
	Kind, Name string
	// InForce are the numbers decisions use.
	InForce Numbers
	// Built are the newest construction's numbers, when the zone still
	// records them (BuiltKnown). BuiltPid built them at BuiltAt, when they
	// replaced other numbers; a first construction leaves both zero.
	Built      Numbers
	BuiltKnown bool
	BuiltPid   int
	BuiltAt    time.Time
	// Live are the numbers an operator set, those of LiveFields. LivePid
	// set them last, at LiveAt.
	Live       Numbers
	LiveFields Fields
	LivePid    int
	LiveAt     time.Time
	// DryRunRejected is the zone's dry-run count of the limiter: the
	// rejections a dry run let through, in every process. It is 0 for a
	// limiter of Kind "?".
	DryRunRejected int64
}

func numbersOf(r record) Numbers {
	return Numbers{Rate: r.Rate, Burst: r.Burst, Limit: r.Limit, Window: time.Duration(r.WindowNs), DryRun: r.dryRun}
}

// Settings returns the numbers of each limiter of d whose construction d
// records, and of each whose live numbers it holds. A limiter of live
// numbers whose construction the zone no longer records has Kind "?" and
// Name its registry key in hex: the name is in the construction's record.
// d may be a read-only view.
//
// Settings returns the errors of d.Scan and d.Records.
func Settings(d *dict.Dict) ([]Setting, error) {
	var out []Setting
	seen := map[uint64]bool{}
	err := d.Scan(func(it dict.Item) bool {
		rest, ok := strings.CutPrefix(it.Key, metaKind+"|")
		if !ok {
			return true
		}
		kind, name, ok := strings.Cut(rest, "|")
		if !ok || !isKind(kind) {
			return true
		}
		out = append(out, settingOf(d, kind, name))
		seen[regKey(kind, name)] = true
		return true
	})
	if err != nil {
		return nil, err
	}
	recs, err := d.Records()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if seen[r.Key] {
			continue
		}
		l := liveOf(r.Data)
		out = append(out, Setting{
			Kind: "?", Name: fmt.Sprintf("%016x", r.Key),
			Live: numbersOf(l.over(record{})), LiveFields: Fields(l.set), LivePid: l.pid,
			LiveAt: time.UnixMilli(l.at), InForce: numbersOf(l.over(record{})),
		})
	}
	return out, nil
}

// settingOf returns the numbers d holds of the limiter of kind named name.
func settingOf(d *dict.Dict, kind, name string) Setting {
	s := Setting{Kind: kind, Name: name}
	s.DryRunRejected, _ = DryRunRejectedOf(d, kind, name)
	if b, ok := readBuilt(d, kind, name); ok {
		s.Built, s.BuiltKnown, s.BuiltPid = numbersOf(b), true, b.Pid
		if b.AtMs != 0 {
			s.BuiltAt = time.UnixMilli(b.AtMs)
		}
	}
	if l, ok := readLive(d, regKey(kind, name)); ok {
		s.Live, s.LiveFields, s.LivePid, s.LiveAt = numbersOf(l.over(record{})), Fields(l.set), l.pid, time.UnixMilli(l.at)
	}
	if r, ok := inForceOf(d, kind, name, nil); ok {
		s.InForce = numbersOf(r)
	} else {
		s.InForce = s.Live
	}
	return s
}

// SetLive sets the live numbers of the limiter of kind named name in d:
// the fields f of n. It is what the limiters' setters do, for a process
// that did not build the limiter, such as shmctl. FieldDryRun switches a
// dry run on or off, as n.DryRun says. Bits of f beyond the Field
// constants are ignored. It checks the numbers in
// force with n as the limiter's constructor does, when d records its
// construction, and each field alone otherwise.
//
// SetLive returns ErrBadName for a kind that is not a limiter's, the
// constructor's errors for numbers it refuses, the dictionary's
// ErrReadOnly, and an error wrapping shm.ErrRegistryFull.
func SetLive(d *dict.Dict, kind, name string, n Numbers, f Fields) error {
	if !isKind(kind) {
		return fmt.Errorf("%w: no kind %q", ErrBadName, kind)
	}
	f &= FieldRate | FieldLimit | FieldBurst | FieldWindow | FieldDryRun
	l := live{set: uint8(f), rate: n.Rate, limit: n.Limit, burst: n.Burst, win: int64(n.Window), dry: n.DryRun}
	if f&FieldRate != 0 && f&FieldLimit != 0 {
		return fmt.Errorf("%w: a rate and a limit", ErrBadLimit)
	}
	before, known := inForceOf(d, kind, name, nil)
	if err := checkFields(kind, l, before, known); err != nil {
		return err
	}
	if err := setLive(d, regKey(kind, name), l); err != nil {
		return fmt.Errorf("limiter: set %s %q: %w", kind, name, err)
	}
	if known {
		return applyChange(d, kind, name, before)
	}
	return nil
}

// checkFields checks live numbers l over the numbers in force, or alone
// when none are known.
func checkFields(kind string, l live, inForce record, known bool) error {
	if known {
		return kindChecks[kind](l.over(inForce))
	}
	switch {
	case l.set&liveRate != 0:
		if err := checkRate(l.rate); err != nil {
			return err
		}
	case l.set&liveLimit != 0 && (l.limit < 1 || l.limit > maxExact):
		return fmt.Errorf("%w: %d", ErrBadLimit, l.limit)
	}
	if l.set&liveBurst != 0 && !(l.burst >= 0 && l.burst <= maxBurstReq) {
		return fmt.Errorf("%w: %v", ErrBadBurst, l.burst)
	}
	if l.set&liveWindow != 0 && l.win < int64(time.Millisecond) {
		return fmt.Errorf("%w: %v", ErrBadWindow, time.Duration(l.win))
	}
	return nil
}

// UnsetLive drops the live numbers of the limiter of kind named name in
// d, and reports whether it had any. The newest construction's numbers
// apply from each process's next decision on.
//
// UnsetLive returns the dictionary's ErrReadOnly.
func UnsetLive(d *dict.Dict, kind, name string) (bool, error) {
	before, known := inForceOf(d, kind, name, nil)
	ok, err := d.DeleteRecord(regKey(kind, name))
	if err != nil {
		return false, fmt.Errorf("limiter: unset %s %q: %w", kind, name, err)
	}
	if ok && known {
		return true, applyChange(d, kind, name, before)
	}
	return ok, nil
}

// KindsOf returns the kinds of the limiters named name whose construction
// d records, or whose live numbers it holds.
func KindsOf(d *dict.Dict, name string) []string {
	var kinds []string
	for _, k := range []string{kindReq, kindCount, kindConn, kindLeasedConn, kindSW, kindGCRA} {
		_, built := readBuilt(d, k, name)
		_, set := readLive(d, regKey(k, name))
		if built || set {
			kinds = append(kinds, k)
		}
	}
	return kinds
}
