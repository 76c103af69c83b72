package testutil

import (
	"os"
	"strings"
	"testing"
)

// READMEShows checks that the README at readme shows lines of the Go file
// example. They must be word for word, and indented as there. The lines
// are those between a line "\t// README:" and a line "\t// README end.".
// They are the body of an Example, which the README shows as a func main.
// So the copy users paste is the code the tests compile and run.
func READMEShows(t testing.TB, example, readme string) {
	t.Helper()
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "\t// README:\n", "\t// README end.\n"
	s := string(src)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q … %q", example, begin, end)
	}
	if snippet := s[i+len(begin) : j]; !strings.Contains(string(doc), snippet) {
		t.Errorf("%s lacks the example of %s, which reads:\n%s", readme, example, snippet)
	}
}
