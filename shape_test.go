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
// small files and short functions in every package, short parameter lists
// in dict, one naming scheme for the locks an internal function needs,
// unsafe in two files of dict, short package docs, short sentences in
// exported docs, and no benchmark figures or dates in Go comments.
const (
	maxDictFileLines = 450
	maxDictParams    = 5
	maxPackageWords  = 700
	maxFileLines     = 450
	maxDocMeanWords  = 15
	maxFuncLines     = 80
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

// corePackages returns the directories of the core module's packages that
// hold non-test Go files. It leaves out bench/, the contrib/ modules and
// testdata.
func corePackages(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" ||
			path == "bench" || path == "contrib") {
			return filepath.SkipDir
		}
		if path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		paths, err := filepath.Glob(filepath.Join(path, "*.go"))
		if err != nil {
			return err
		}
		for _, p := range paths {
			if !strings.HasSuffix(p, "_test.go") {
				dirs = append(dirs, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no packages found")
	}
	return dirs
}

// TestFileLength checks that no non-test file of the core module outside
// bench/ has more than maxFileLines lines.
func TestFileLength(t *testing.T) {
	for _, dir := range corePackages(t) {
		fset, files := parseDir(t, dir)
		for name, f := range files {
			if n := fset.Position(f.End()).Line; n > maxFileLines {
				t.Errorf("%s has %d lines, want at most %d: split it by concern",
					filepath.Join(dir, name), n, maxFileLines)
			}
		}
	}
}

// TestFunctionLength checks that no non-test function of the core module
// outside bench/ has more than maxFuncLines lines, from func to its
// closing brace.
func TestFunctionLength(t *testing.T) {
	for _, dir := range corePackages(t) {
		fset, files := parseDir(t, dir)
		for name, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > maxFuncLines {
					t.Errorf("%s: %s has %d lines, want at most %d: split it",
						filepath.Join(dir, name), fd.Name.Name, n, maxFuncLines)
				}
			}
		}
	}
}

func TestPackageDocLength(t *testing.T) {
	for _, dir := range corePackages(t) {
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

// TestDocSentences checks that the doc comments of each package's exported
// identifiers average under maxDocMeanWords words a sentence.
func TestDocSentences(t *testing.T) {
	for _, dir := range corePackages(t) {
		_, files := parseDir(t, dir)
		var docs []*ast.CommentGroup
		for _, f := range files {
			docs = append(docs, exportedDocs(f)...)
		}
		sentences, words := 0, 0
		for _, d := range docs {
			for _, s := range docSentences(d.Text()) {
				sentences++
				words += len(strings.Fields(s))
			}
		}
		if sentences == 0 {
			continue
		}
		mean := float64(words) / float64(sentences)
		t.Logf("package %s: %d sentences, %.1f words a sentence", dir, sentences, mean)
		if mean >= maxDocMeanWords {
			t.Errorf("package %s: exported docs average %.1f words a sentence, want under %d",
				dir, mean, maxDocMeanWords)
		}
	}
}

// exportedDocs returns the doc comments of f's exported functions, methods,
// types, constants and variables.
func exportedDocs(f *ast.File) []*ast.CommentGroup {
	var docs []*ast.CommentGroup
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && d.Doc != nil {
				docs = append(docs, d.Doc)
			}
		case *ast.GenDecl:
			exported := false
			for _, s := range d.Specs {
				var doc *ast.CommentGroup
				switch s := s.(type) {
				case *ast.TypeSpec:
					exported, doc = s.Name.IsExported(), s.Doc
				case *ast.ValueSpec:
					for _, n := range s.Names {
						exported = exported || n.IsExported()
					}
					doc = s.Doc
				}
				if exported && doc != nil {
					docs = append(docs, doc)
				}
			}
			if exported && d.Doc != nil {
				docs = append(docs, d.Doc)
			}
		}
	}
	return docs
}

// docSentences returns the prose sentences of a doc comment's text. Code
// blocks (indented lines) are left out, and a paragraph ends a sentence.
func docSentences(text string) []string {
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = nil
		}
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, " "), strings.HasPrefix(line, "\t"):
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	var sentences []string
	for _, p := range paras {
		for _, s := range sentenceEnd.Split(p+" ", -1) {
			if s = strings.TrimSpace(s); s != "" {
				sentences = append(sentences, s)
			}
		}
	}
	return sentences
}

// TestDocSentencesSplit checks how docSentences splits a doc comment.
func TestDocSentencesSplit(t *testing.T) {
	doc := "One two three. Four\nfive.\n\n\tcode. here\n\nA paragraph\n"
	got := docSentences(doc)
	want := []string{"One two three", "Four five", "A paragraph"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("docSentences = %q, want %q", got, want)
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
