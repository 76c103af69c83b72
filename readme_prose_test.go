package shmzone_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's prose rule: sentences average under maxMeanWords words, and
// none has more than maxWords.
const (
	maxMeanWords = 18
	maxWords     = 40
)

// TestReadmeProse checks the README's sentence lengths. It measures prose
// only: code blocks, tables and headings are left out.
func TestReadmeProse(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sentences := readmeSentences(string(b))
	if len(sentences) == 0 {
		t.Fatal("README.md: no prose sentences found")
	}
	total := 0
	for _, s := range sentences {
		n := len(strings.Fields(s))
		total += n
		if n > maxWords {
			t.Errorf("README.md: a sentence of %d words, want at most %d: %q", n, maxWords, s)
		}
	}
	mean := float64(total) / float64(len(sentences))
	t.Logf("README.md: %d bytes, %d sentences, %.1f words a sentence on average", len(b), len(sentences), mean)
	if mean >= maxMeanWords {
		t.Errorf("README.md: sentences average %.1f words, want under %d", mean, maxMeanWords)
	}
}

var (
	// mdLink matches a Markdown link or image; its text is kept.
	mdLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// sentenceEnd matches the end of a sentence: a full stop, question or
	// exclamation mark, then any closing emphasis, quote or bracket, then a
	// space.
	sentenceEnd = regexp.MustCompile(`[.!?][*_"')\]]*\s+`)
	// listItem matches the start of a bullet or numbered list item.
	listItem = regexp.MustCompile(`^\s*([-*+]|\d+\.)\s+`)
)

// readmeSentences returns the prose sentences of a Markdown document. A
// paragraph or a list item ends a sentence even without a full stop.
func readmeSentences(doc string) []string {
	var blocks []string // paragraphs and list items
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, " "))
			cur = nil
		}
	}
	inCode := false
	for line := range strings.Lines(doc) {
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			inCode = !inCode
			continue
		case inCode:
			continue
		case trimmed == "", strings.HasPrefix(trimmed, "#"),
			strings.HasPrefix(trimmed, "|"), strings.HasPrefix(trimmed, "<!--"):
			flush()
			continue
		case listItem.MatchString(line):
			flush()
			line = listItem.ReplaceAllString(line, "")
		}
		cur = append(cur, strings.TrimSpace(line))
	}
	flush()

	var sentences []string
	for _, b := range blocks {
		b = mdLink.ReplaceAllString(b, "$1")
		for _, s := range sentenceEnd.Split(b+" ", -1) {
			if s = strings.TrimSpace(s); s != "" {
				sentences = append(sentences, s)
			}
		}
	}
	return sentences
}

// TestReadmeSentences checks how readmeSentences splits a document.
func TestReadmeSentences(t *testing.T) {
	doc := "# Title\n\nOne two three. Four\nfive.\n\n```go\nx := 1. y\n```\n\n" +
		"| a | b. c |\n|---|---|\n\n- A bullet\n- another [link](x.md). End\n\n**Bold.** Plain.\n"
	got := readmeSentences(doc)
	want := []string{"One two three", "Four five", "A bullet", "another link", "End", "**Bold", "Plain"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("readmeSentences = %q, want %q", got, want)
	}
}
