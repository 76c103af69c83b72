package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLs(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.ok("create", "empty", "--size", "1M", "--shards", "2")
	os.WriteFile(h.path("junk"), []byte("not a zone"), 0o600)
	os.WriteFile(h.dir+"/notes.txt", []byte("not listed"), 0o600)
	writeOtherLayout(t, h.path("other"))
	golden(t, "ls", h.transcript([]string{"ls"}, []string{"ls", h.dir + "/nothing"}))
	golden(t, "ls_json", h.transcript([]string{"ls", "--json", h.dir}))
}

// TestLsQuotesNames prints a zone name that is not printable text quoted,
// as keys are: no control code reaches the terminal and no stray byte
// shifts tabwriter's columns. In JSON a name or path that is not UTF-8 is
// in name_b64 or path_b64, so that the path names the file.
func TestLsQuotesNames(t *testing.T) {
	h := newHarness(t)
	names := []string{"e\x1b[31mred", "\xff", "plain"}
	for _, name := range names {
		h.ok("create", name, "--size", "256K", "--shards", "1")
	}
	out := h.ok("ls")
	if strings.Contains(out, "\x1b") || !utf8.ValidString(out) {
		t.Errorf("ls wrote a control code or a byte that is not UTF-8:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	col := strings.Index(lines[0], "SIZE")
	wantNames := []string{`"e\x1b[31mred"`, "plain", `"\xff"`} // sorted by their bytes
	for i, line := range lines[1:] {
		if name, _, _ := strings.Cut(line, " "); i >= len(wantNames) || name != wantNames[i] {
			t.Errorf("ls line %d = %q, want the name %s", i+1, line, wantNames[min(i, len(wantNames)-1)])
		}
		if got := strings.Index(line, "256.0 KiB"); got != col {
			t.Errorf("ls line %q: size at column %d, want %d, under SIZE", line, got, col)
		}
	}

	var zones []struct {
		Name    string `json:"name"`
		NameB64 string `json:"name_b64"`
		Path    string `json:"path"`
		PathB64 string `json:"path_b64"`
	}
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &zones); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zones {
		name, path := z.Name, z.Path
		if z.NameB64 != "" {
			b, _ := base64.StdEncoding.DecodeString(z.NameB64)
			name = string(b)
		}
		if z.PathB64 != "" {
			b, _ := base64.StdEncoding.DecodeString(z.PathB64)
			path = string(b)
		}
		got = append(got, name)
		if path != h.path(name) {
			t.Errorf("ls --json: zone %q has path %q, want %q", name, path, h.path(name))
		}
		if (z.NameB64 != "") != !utf8.ValidString(name) || (z.PathB64 != "") != !utf8.ValidString(path) {
			t.Errorf("ls --json: %+v: want name_b64 and path_b64 exactly for a name and path that are not UTF-8", z)
		}
	}
	if want := []string{"e\x1b[31mred", "plain", "\xff"}; strings.Join(got, "/") != strings.Join(want, "/") {
		t.Errorf("ls --json names %q, want %q", got, want)
	}
}
