package shmprom_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExample checks that the repository's README shows the code of
// Example word for word, indented as there (the body of a func main), so
// that the copy users paste compiles and runs.
func TestReadmeExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := between(t, string(src), "\t// README:\n", "\t// README end.\n")
	if !strings.Contains(string(readme), snippet) {
		t.Errorf("README.md lacks the example of example_test.go, which reads:\n%s", snippet)
	}
}

// between returns the lines of s between the lines begin and end.
func between(t *testing.T, s, begin, end string) string {
	t.Helper()
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("no %q … %q", begin, end)
	}
	return s[i+len(begin) : j]
}
