package limiter

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/shmzone/shmzone/dict"
)

// A change of a Count's limit in force must reach its open windows once
// (DESIGN.md, section 12). Processes change the numbers at once: two may
// build the same Count anew, and an operator may set live numbers
// meanwhile. So the meta record of a Count also holds Applied: the limit
// in force whose difference the open windows got last. A process that
// changed the numbers claims the difference: it swaps the record for one
// with Applied the limit in force, with CompareAndSwap. Only the process
// whose swap succeeds adds the difference. A swap that fails read a record
// that another process changed, and tries again over the new one.
//
// A claim reads the registry after the record. Every claim writes the
// record, with Seq one more, even when the difference is 0. So a claim
// that read the registry before another process changed it cannot succeed
// after that process's claim. The last claim to succeed read the registry
// as it ends, and Applied ends as the limit in force. The differences
// claimed add up to the change from the first Applied to the last.

// applyOnceStall is called by applyOnce between its reads and its swap.
// A test sets it to replay an interleaving. It is nil otherwise.
var applyOnceStall func()

// applyOnce publishes built, when it is not nil, as the newest
// construction's numbers of the limiter of kind named name, unless the
// zone records them already. For a Count, it then claims the change of the limit in force
// since the last claim, and adds it to the open windows. prior is the
// limit in force before the caller's change, or 0 when unknown. It stands
// for Applied in a record written before Applied was.
//
// A read-only zone, or one without room, goes without the record and
// claims nothing. applyOnce returns the errors of applyDelta.
func applyOnce(d *dict.Dict, kind, name string, built *record, prior int64) error {
	if built == nil && kind != kindCount {
		return nil
	}
	k := metaKind + "|" + kind + "|" + name
	for {
		v, _, err := d.Get(k)
		if err != nil && !errors.Is(err, dict.ErrNotFound) {
			return nil
		}
		found := err == nil
		cur, have := parseBuilt(v, found)
		next := cur
		publishing := built != nil && (!have || cur.numbers() != built.numbers())
		switch {
		case publishing:
			next = built.numbers()
			if have {
				next.Pid, next.AtMs = os.Getpid(), d.Now()
			}
			next.Applied = cur.Applied
		case !have:
			return nil // no construction recorded: no limit known
		}
		var delta int64
		if kind == kindCount {
			limit := liveOver(d, kind, name, next.numbers()).Limit
			applied := cur.Applied
			if applied == 0 && have {
				applied = prior
				if applied == 0 {
					applied = liveOver(d, kind, name, cur.numbers()).Limit
				}
			}
			if have {
				delta = limit - applied
			}
			next.Applied, next.Seq = limit, cur.Seq+1
		}
		if next == cur && have {
			return nil
		}
		if applyOnceStall != nil {
			applyOnceStall()
		}
		swapped, err := swapBuilt(d, k, v, found, next)
		if err != nil {
			return nil
		}
		if !swapped {
			continue
		}
		if publishing {
			d.Get(k) // marks the record used
			d.BumpGeneration()
		}
		return applyDelta(d, kind, name, delta)
	}
}

// parseBuilt decodes a meta record's value.
func parseBuilt(v dict.Value, found bool) (record, bool) {
	var r record
	if !found || v.Kind() != dict.KindBytes || json.Unmarshal(v.Bytes(), &r) != nil {
		return record{}, false
	}
	return r, true
}

// swapBuilt stores r in the meta record k, if it still holds old, or is
// still absent when found is false. It reports whether it stored r. A
// record that vanished meanwhile reports false, and the caller reads
// again.
func swapBuilt(d *dict.Dict, k string, old dict.Value, found bool, r record) (bool, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	if !found {
		_, err := d.Add(k, dict.Bytes(b), 0, 0)
		if errors.Is(err, dict.ErrExists) {
			return false, nil
		}
		return err == nil, err
	}
	ok, err := d.CompareAndSwap(k, old, dict.Bytes(b), 0)
	if errors.Is(err, dict.ErrNotFound) {
		return false, nil
	}
	return ok, err
}
