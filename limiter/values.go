package limiter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shmzone/shmzone/dict"
)

// read returns key's value when accepts says it is one the limiter
// writes, found false when the key is absent, and ErrAbused for a foreign
// value. A bytes value is appended to buf[:0] (nil for numbers).
func read(d *dict.Dict, key string, buf []byte, accepts func(dict.Value) bool) (v dict.Value, found bool, err error) {
	v, _, err = d.GetInto(key, buf[:0])
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return v, false, nil
	case err != nil:
		return v, false, dictErr(key, err)
	case !accepts(v):
		return v, false, foreignOf(v).err(key)
	}
	return v, true, nil
}

// The values limiters accept (state.go).
func isReqState(v dict.Value) bool { return v.Kind() == dict.KindBytes && v.Len() == reqSize }
func isSWState(v dict.Value) bool  { return v.Kind() == dict.KindBytes && v.Len() == swSize }
func isInt(v dict.Value) bool      { return v.Kind() == dict.KindInt }
func isNumber(v dict.Value) bool   { return v.Kind() == dict.KindInt || v.Kind() == dict.KindFloat }

// foreign describes a value that a limiter does not write, found under its
// key: another limiter's or another program's, of another kind or size, or
// of the limiter's kind and size with contents it cannot have written (bad).
// It is small so that an Update's fn can note it without copying the Value.
type foreign struct {
	kind dict.Kind
	n    int    // bytes
	bad  string // what is wrong with a value of the right kind and size
}

func foreignOf(v dict.Value) foreign { return foreign{kind: v.Kind(), n: v.Len()} }

// badOf notes a value of the right kind and size whose contents are bad,
// as the check functions below describe them.
func badOf(v dict.Value, why string) foreign { return foreign{kind: v.Kind(), n: v.Len(), bad: why} }

// found reports whether a foreign value was noted.
func (f foreign) found() bool { return f.kind != dict.KindNone }

// err returns ErrAbused for a value of another kind or size under key, and
// ErrBadState for bad contents.
func (f foreign) err(key string) error {
	k := strings.Clone(key) // key may alias a decision's buffer (names.go)
	if f.bad != "" {
		return fmt.Errorf("%w: key %q holds %s", ErrBadState, k, f.bad)
	}
	return fmt.Errorf("%w: key %q holds %s of %d bytes", ErrAbused, k, f.kind, f.n)
}

// shapeErr is dictErr for a decision's write to zone key zk. A value of
// another kind or size, which the write refuses with dict.ErrWrongShape,
// is read again off the decision's path to say what it is.
func shapeErr(d *dict.Dict, zk string, err error) error {
	if errors.Is(err, dict.ErrWrongShape) {
		if v, _, gerr := d.Get(zk); gerr == nil {
			return foreignOf(v).err(zk)
		}
	}
	return dictErr(zk, err)
}

// dictErr wraps an error of the dictionary for key; a list, a non-number or
// a value of another shape under the key is ErrAbused.
func dictErr(key string, err error) error {
	k := strings.Clone(key) // key may alias a decision's buffer (names.go)
	if errors.Is(err, dict.ErrIsList) || errors.Is(err, dict.ErrNotNumber) || errors.Is(err, dict.ErrWrongShape) {
		return fmt.Errorf("%w: key %q: %w", ErrAbused, k, err)
	}
	return fmt.Errorf("limiter: key %q: %w", k, err)
}
