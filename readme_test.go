package shmzone_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// TestReadmeExample checks that the README shows the body of Example word
// for word, so that the quick start users paste is the code the tests run.
func TestReadmeExample(t *testing.T) {
	testutil.READMEShows(t, "example_test.go", "README.md")
}

// TestReadmeQuickStartBuilds builds the README's first Go block, the quick
// start, as a program of this module, with its imports as shown. The file
// is given to the compiler as an overlay: nothing is written to the tree.
func TestReadmeQuickStartBuilds(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, ok := firstGoBlock(string(b))
	if !ok || !strings.HasPrefix(src, "package main\n") {
		t.Fatalf("README.md: the first Go block is not a whole program (package main):\n%s", src)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build with: %v", err)
		}
	}
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	// A package path no directory of the module has.
	pkg := filepath.Join(root, "internal", "readmequickstart")
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(pkg, "main.go"): main},
	})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "build", "-overlay", overlayFile, "-o", os.DevNull, "./internal/readmequickstart")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("README.md: the quick start does not build: %v\n%s", err, out.String())
	}
}

// firstGoBlock returns the contents of the first fenced Go code block of a
// Markdown document.
func firstGoBlock(doc string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "\n```go\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	return block + "\n", ok
}
