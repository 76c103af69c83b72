package shmzone_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The shape the code keeps so that the next reader can find their way:
// small files in dict, short parameter lists, one naming scheme for the
// locks an internal function needs, unsafe in two files, short package
// docs, and no benchmark figures or dates in Go comments.
const (
	maxDictFileLines = 450
	maxDictParams    = 5
	maxPackageWords  = 700
)

// oldSuffixes are the function-name suffixes that dict.go's legend
// replaced: Optimistic, InPage and InShard are the only ones left.
var oldSuffixes = regexp.MustCompile(`(Guarded|Body|UnderLock|Locked|Pinned|Slow|After)$`)

// parseDir parses the non-test Go files of dir, with comments.
func parseDir(t *testing.T, dir string) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = f
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return fset, files
}

func TestDictShape(t *testing.T) {
	fset, files := parseDir(t, "dict")
	for name, f := range files {
		if n := fset.Position(f.End()).Line; n > maxDictFileLines {
			t.Errorf("dict/%s has %d lines, want at most %d: split it", name, n, maxDictFileLines)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"unsafe"` && name != "layout.go" && name != "dict.go" {
				t.Errorf("dict/%s imports unsafe; only layout.go and dict.go may", name)
			}
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if n := fd.Type.Params.NumFields(); n > maxDictParams {
				t.Errorf("dict/%s: %s takes %d parameters, want at most %d", name, fd.Name.Name, n, maxDictParams)
			}
			if oldSuffixes.MatchString(fd.Name.Name) {
				t.Errorf("dict/%s: %s has a suffix the legend in dict.go does not define", name, fd.Name.Name)
			}
		}
	}
}

func TestPackageDocLength(t *testing.T) {
	for _, dir := range []string{"dict", "limiter"} {
		_, files := parseDir(t, dir)
		words := 0
		for _, f := range files {
			if f.Doc != nil {
				words += len(strings.Fields(f.Doc.Text()))
			}
		}
		if words == 0 || words >= maxPackageWords {
			t.Errorf("package %s's doc has %d words, want 1 to %d", dir, words, maxPackageWords-1)
		}
	}
}

// goLayout is the date of Go's time layouts, which a comment may quote.
const goLayout = "2006-01-02"

// figure matches a date or a throughput in a comment.
var figure = regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b|\d\s*[kKMG]?\s*ops/s\b|\d+(\.\d+)?\s*[kKMG]?ops/s`)

func TestNoFiguresInComments(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				if m := figure.FindString(c.Text); m != "" && m != goLayout {
					t.Errorf("%s: comment holds the figure %s; figures go in bench/RESULTS.md",
						fset.Position(c.Pos()), strconv.Quote(m))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
