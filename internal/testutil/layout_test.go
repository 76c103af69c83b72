package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// layoutT records the failures of a layout check; Fatalf ends the
// goroutine, not the test.
type layoutT struct {
	testing.TB
	errs []string
}

func (r *layoutT) Helper() {}
func (r *layoutT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *layoutT) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs check with a recording TB and returns what it reported.
func failures(check func(t testing.TB)) []string {
	r := &layoutT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.errs
}

type sample struct {
	A uint32
	B uint16
	_ [2]byte
	C uint64
}

type gappy struct {
	A uint32
	C uint64 // the compiler pads 4 bytes before it
}

const sampleSrc = `package x

// The sample:
//
//	0        4        6        8
//	+--------+--------+--------+
//	| a      | b      | (pad)  |
//	+--------+--------+--------+
//	8                 16
//	+-----------------+
//	| c (ns)          |
//	+-----------------+
//
// A row may end without an offset when the next row starts there:
//
//	0        4        6
//	+--------+--------+--------+
//	| x      | b      | (pad)  |
//	+--------+--------+--------+
//	8                 16
//	+-----------------+
//	| c               |
//	+-----------------+
//
// Misdrawn: C does not start at 7.
//
//	0        4        6        7
//	+--------+--------+--------+
//	| bad    | b      | (pad)  |
//	+--------+--------+--------+
//	8                 16
//	+-----------------+
//	| c               |
//	+-----------------+
//
// The last row must end with an offset:
//
//	0        4
//	+--------+--------+
//	| open   | b      |
//	+--------+--------+
//
// Twice the same first box:
//
//	0        4
//	+--------+
//	| twice  |
//	+--------+
//
//	0        4
//	+--------+
//	| twice  |
//	+--------+
`

func writeSample(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "layout.go")
	if err := os.WriteFile(path, []byte(sampleSrc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDrawing(t *testing.T) {
	path := writeSample(t)
	want := []Cell{{0, 4, "a"}, {4, 6, "b"}, {6, 8, "(pad)"}, {8, 16, "c (ns)"}}
	if got := Drawing(t, path, "a"); !reflect.DeepEqual(got, want) {
		t.Errorf("Drawing(a) = %+v, want %+v", got, want)
	}
	want[0].Label, want[3].Label = "x", "c"
	if got := Drawing(t, path, "x"); !reflect.DeepEqual(got, want) {
		t.Errorf("Drawing(x) = %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		first, want string
	}{
		{"open", "no offset above the + at column 18"},
		{"twice", "2 drawings whose first box is \"twice\""},
		{"absent", "0 drawings whose first box is \"absent\""},
		{"bad", "row 2 starts at 8, row 1 ends at 7"},
	} {
		errs := failures(func(r testing.TB) { Drawing(r, path, tt.first) })
		if len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
			t.Errorf("Drawing(%s) reported %q, want one failure saying %q", tt.first, errs, tt.want)
		}
	}
}

func TestCheckDrawing(t *testing.T) {
	path := writeSample(t)
	if errs := failures(func(r testing.TB) { CheckDrawing(r, path, "a", sample{}) }); len(errs) != 0 {
		t.Errorf("CheckDrawing(a, sample) reported %q, want nothing", errs)
	}
	errs := failures(func(r testing.TB) { CheckDrawing(r, path, "x", sample{}) })
	if len(errs) != 1 || !strings.Contains(errs[0], `box 0 is "x" at [0, 4), testutil.sample.A is at [0, 4)`) {
		t.Errorf("CheckDrawing(x, sample) reported %q, want the label x refused for A", errs)
	}
	errs = failures(func(r testing.TB) { CheckDrawing(r, path, "a", gappy{}) })
	if len(errs) != 1 || !strings.Contains(errs[0], "has 4 boxes") {
		t.Errorf("CheckDrawing(a, gappy) reported %q, want a box count mismatch", errs)
	}
}

func TestCheckFields(t *testing.T) {
	want := []Field{{"A", 0, 4}, {"B", 4, 2}, {"_", 6, 2}, {"C", 8, 8}}
	if errs := failures(func(r testing.TB) { CheckFields(r, sample{}, want) }); len(errs) != 0 {
		t.Errorf("CheckFields(sample) reported %q, want nothing", errs)
	}
	moved := append([]Field(nil), want...)
	moved[3].Off = 12
	errs := failures(func(r testing.TB) { CheckFields(r, sample{}, moved) })
	if len(errs) != 1 || !strings.Contains(errs[0], "field 3 = {Name:C Off:8 Size:8}, want {Name:C Off:12 Size:8}") {
		t.Errorf("CheckFields(sample, C moved) reported %q, want field 3 refused", errs)
	}
	errs = failures(func(r testing.TB) { CheckFields(r, sample{}, want[:3]) })
	if len(errs) != 1 || !strings.Contains(errs[0], "has 4 fields") {
		t.Errorf("CheckFields(sample, 3 fields) reported %q, want a field count mismatch", errs)
	}
	errs = failures(func(r testing.TB) { CheckFields(r, gappy{}, []Field{{"A", 0, 4}, {"C", 8, 8}}) })
	if len(errs) != 1 || !strings.Contains(errs[0], "pad by hand with _ [4]byte") {
		t.Errorf("CheckFields(gappy) reported %q, want the compiler's padding refused", errs)
	}
}
