package testutil

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Field is one field of an overlay struct as a layout test pins it. It has
// a name, an offset and a size in bytes. The name "_" is hand-written
// padding.
type Field struct {
	Name      string
	Off, Size uintptr
}

// CheckFields fails t unless the struct v has exactly the fields of want.
// They must be in order, with the same names, offsets and sizes. They must
// cover its bytes with no gap the compiler filled. So a field added,
// removed, moved or resized must change want too.
func CheckFields(t testing.TB, v any, want []Field) {
	t.Helper()
	typ := reflect.TypeOf(v)
	if typ.Kind() != reflect.Struct {
		t.Fatalf("CheckFields(%T): not a struct", v)
	}
	var got []Field
	for i := range typ.NumField() {
		f := typ.Field(i)
		got = append(got, Field{f.Name, f.Offset, f.Type.Size()})
	}
	if len(got) != len(want) {
		t.Errorf("%s has %d fields %v, want %d %v", typ, len(got), got, len(want), want)
		return
	}
	end := uintptr(0)
	for i, g := range got {
		if g != want[i] {
			t.Errorf("%s field %d = %+v, want %+v", typ, i, g, want[i])
		}
		if g.Off != end {
			t.Errorf("%s.%s at %d, previous field ends at %d: pad by hand with _ [%d]byte", typ, g.Name, g.Off, end, int(g.Off)-int(end))
		}
		end = g.Off + g.Size
	}
	if end != typ.Size() {
		t.Errorf("%s fields end at %d, Sizeof = %d: pad by hand", typ, end, typ.Size())
	}
}

// Cell is one box of a layout drawing. It covers the bytes [Off, End). Its
// label is the first line written in the box, spaces trimmed.
type Cell struct {
	Off, End int
	Label    string
}

// Drawing returns the cells of the ASCII drawing, in the comments of the Go
// source file path, whose first box is labelled first. A drawing is a run
// of comment lines indented by a tab, in rows like
//
//	0        8        12
//	+--------+--------+
//	| magic  |version |
//	+--------+--------+
//
// where each + of the top border has the offset of that boundary written
// above it, starting in the + column. The last + of a row may go without
// one when the next row starts at it. Drawing fails t when no drawing or
// more than one starts with first, or when an offset is missing.
func Drawing(t testing.TB, path, first string) []Cell {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("Drawing: %v", err)
	}
	var found [][]string
	for _, block := range drawingBlocks(string(src)) {
		if rows := drawingRows(block); len(rows) > 0 && len(rows[0].labels) > 0 && rows[0].labels[0] == first {
			found = append(found, block)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d drawings whose first box is %q, want 1", path, len(found), first)
	}
	cells, err := drawingCells(found[0])
	if err != nil {
		t.Fatalf("%s: drawing %q: %v", path, first, err)
	}
	return cells
}

// CheckDrawing fails t unless the drawing of Drawing(t, path, first) shows
// exactly the fields of the struct v. It wants one box per field, at its
// offset and of its size. The box is labelled with the start of the
// field's name, in any case. "(pad)" labels "_". A trailing note such as
// "[4]uint64" or "(ms)" is ignored.
func CheckDrawing(t testing.TB, path, first string, v any) {
	t.Helper()
	typ := reflect.TypeOf(v)
	cells := Drawing(t, path, first)
	if len(cells) != typ.NumField() {
		t.Fatalf("%s: drawing %q has %d boxes %v, %s has %d fields", path, first, len(cells), cells, typ, typ.NumField())
	}
	for i, c := range cells {
		f := typ.Field(i)
		off, end := int(f.Offset), int(f.Offset+f.Type.Size())
		if c.Off != off || c.End != end || !labelNames(c.Label, f.Name) {
			t.Errorf("%s: drawing %q box %d is %q at [%d, %d), %s.%s is at [%d, %d)", path, first, i, c.Label, c.Off, c.End, typ, f.Name, off, end)
		}
	}
	if n := len(cells); n > 0 && cells[n-1].End != int(typ.Size()) {
		t.Errorf("%s: drawing %q ends at %d, Sizeof(%s) = %d", path, first, cells[n-1].End, typ, typ.Size())
	}
}

// labelNames reports whether a drawing's label names the field name.
func labelNames(label, name string) bool {
	if name == "_" {
		return label == "(pad)"
	}
	word, _, _ := strings.Cut(label, " ")
	return word != "" && strings.HasPrefix(strings.ToLower(name), strings.ToLower(word))
}

// drawingBlocks returns the runs of consecutive tab-indented comment lines
// of src, without the comment marker and the tab.
func drawingBlocks(src string) [][]string {
	var blocks [][]string
	var cur []string
	for line := range strings.SplitSeq(src, "\n") {
		if rest, ok := strings.CutPrefix(line, "//\t"); ok {
			cur = append(cur, rest)
			continue
		}
		if len(cur) > 0 {
			blocks = append(blocks, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks
}

// A drawingRow is one row of boxes: the line above its top border, the
// columns of the border's + signs, and the labels between them.
type drawingRow struct {
	above  string
	plus   []int
	labels []string
}

func isBorder(line string) bool {
	return strings.HasPrefix(line, "+") && strings.Trim(line, "+-. ") == ""
}

// drawingRows finds the rows of a block: a border followed by a line of
// boxes.
func drawingRows(block []string) []drawingRow {
	var rows []drawingRow
	for i := 0; i+1 < len(block); i++ {
		if !isBorder(block[i]) || !strings.HasPrefix(block[i+1], "|") {
			continue
		}
		r := drawingRow{}
		if i > 0 {
			r.above = block[i-1]
		}
		for c, ch := range block[i] {
			if ch == '+' {
				r.plus = append(r.plus, c)
			}
		}
		box := block[i+1]
		for j := 0; j+1 < len(r.plus); j++ {
			lo, hi := min(r.plus[j]+1, len(box)), min(r.plus[j+1], len(box))
			r.labels = append(r.labels, strings.Trim(box[lo:hi], "| "))
		}
		rows = append(rows, r)
		i++ // the box line
	}
	return rows
}

// drawingCells reads the offsets above each row's + signs.
func drawingCells(block []string) ([]Cell, error) {
	rows := drawingRows(block)
	offs := make([][]int, len(rows))
	for i, r := range rows {
		for j, c := range r.plus {
			n, ok := numberAt(r.above, c)
			if !ok {
				if j != len(r.plus)-1 || i == len(rows)-1 {
					return nil, fmt.Errorf("row %d: no offset above the + at column %d", i+1, c)
				}
				n = -1 // the next row's start, below
			}
			offs[i] = append(offs[i], n)
		}
	}
	var cells []Cell
	for i, r := range rows {
		if last := len(offs[i]) - 1; offs[i][last] < 0 {
			offs[i][last] = offs[i+1][0]
		}
		if i > 0 && offs[i][0] != cells[len(cells)-1].End {
			return nil, fmt.Errorf("row %d starts at %d, row %d ends at %d", i+1, offs[i][0], i, cells[len(cells)-1].End)
		}
		for j, label := range r.labels {
			cells = append(cells, Cell{Off: offs[i][j], End: offs[i][j+1], Label: label})
		}
	}
	return cells, nil
}

// numberAt returns the decimal number written in line from column c, which
// must start a word.
func numberAt(line string, c int) (int, bool) {
	if c >= len(line) || (c > 0 && line[c-1] != ' ') {
		return 0, false
	}
	end := c
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	if end < len(line) && line[end] != ' ' {
		return 0, false
	}
	n, err := strconv.Atoi(line[c:end])
	return n, err == nil
}
