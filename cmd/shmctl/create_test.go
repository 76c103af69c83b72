package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreate(t *testing.T) {
	h := newHarness(t)
	golden(t, "create", h.transcript(
		[]string{"create", "app", "--size", "1M"},
		[]string{"create", "big", "--size", "64MiB", "--shards", "16", "--perm", "0640"},
		[]string{"create", h.dir + "/by-path.zone", "--size", "256K"},
		[]string{"create", "app", "--size", "2M"},
		[]string{"create", "nosize"},
	))
	fi, err := os.Stat(h.path("big"))
	if err != nil || fi.Size() > 64<<20 || fi.Size() < 63<<20 || fi.Mode().Perm() != 0o640 {
		t.Errorf("big.zone: %v; want 64 MiB less rounding to pages, mode 0640", err)
	}
	if hd := zoneHeader(t, h.path("big")); hd.Shards != 16 {
		t.Errorf("big.zone has %d shards, want 16", hd.Shards)
	}
	if hd := zoneHeader(t, h.path("app")); hd.Size != 1<<20 {
		t.Errorf("app.zone after a second create: %d bytes, want its first size", hd.Size)
	}
	for _, bad := range []string{"0", "-1", "1X", "", "12.5M"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
	}
	if _, errs, code := h.run("create", "x", "--size", "1M", "--perm", "999"); code != exitUsage || !strings.Contains(errs, "--perm") {
		t.Errorf("create --perm 999: exit %d, %q", code, errs)
	}
}

func TestCreateBadNames(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct {
		name string
		code int
		says string
	}{
		{"", exitUsage, "empty zone name"},
		{".", exitUsage, `zone name "." names a directory`},
		{"..", exitUsage, `zone name ".." names a directory`},
		{"sub/", exitUsage, `zone name "sub/" names a directory`},
		{h.dir + "/..", exitUsage, "names a directory"},
		{h.dir, exitNotZone, h.dir + " is a directory; name a file in it"},
		{"/dev/null", exitNotZone, "not a regular file: /dev/null"},
	} {
		_, errs, code := h.run("create", tt.name, "--size", "1M")
		if code != tt.code || !strings.Contains(errs, tt.says) {
			t.Errorf("create %q: exit %d, %q; want exit %d saying %q", tt.name, code, errs, tt.code, tt.says)
		}
	}
	if entries, err := os.ReadDir(h.dir); err != nil || len(entries) != 0 {
		t.Errorf("bad names left %d files in the zone folder (%v)", len(entries), err)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"4096", 4096}, {"64K", 64 << 10}, {"64k", 64 << 10}, {"64KiB", 64 << 10}, {"64KB", 64 << 10},
		{"3M", 3 << 20}, {"1G", 1 << 30}, {"2T", 2 << 40}, {"100b", 100}, {"64Ki", 64 << 10},
	}
	for _, tt := range tests {
		if got, err := parseSize(tt.in); got != tt.want || err != nil {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	// An "i" names a binary unit: alone it is no unit.
	for _, bad := range []string{"70000i", "70000iB", "70000ib", "i", "iB", "KiKiB"} {
		if got, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) = %d, nil; want an error", bad, got)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 64 << 20: "64.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFormatSizeRoundsBeforeUnit picks the unit after rounding to a tenth:
// a size just below a unit reads as one of it, never as 1024.0 of the one
// below.
func TestFormatSizeRoundsBeforeUnit(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{1<<20 - 1, "1.0 MiB"},
		{1<<30 - 1, "1.0 GiB"},
		{1<<40 - 1, "1.0 TiB"},
		{1048524, "1023.9 KiB"}, // 1023.949… KiB
		{1048525, "1.0 MiB"},    // 1023.950… KiB, which rounds up
		{1<<50 - 1, "1024.0 TiB"},
		{1 << 50, "1024.0 TiB"}, // no unit above TiB
	}
	for _, tt := range tests {
		if got := formatSize(tt.n); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// A zone in a folder that does not exist is an error naming the folder,
// exit 8: not "no such zone" (exit 3) and its advice to create one, which
// would fail the same way. No folder is made.
func TestCreateInMissingFolder(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.dir, "nodir")
	zone := filepath.Join(dir, "app.zone")
	_, errs, code := h.run("create", zone, "--size", "256K")
	want := "cannot create zone " + zone + ": folder " + dir + " does not exist"
	if code != exitFail || !strings.Contains(errs, want) || strings.Contains(errs, "create one with") {
		t.Errorf("create %s = exit %d, stderr %q; want %d and %q", zone, code, errs, exitFail, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("create in a missing folder made it: %v", err)
	}
}

// A --perm that is no file mode, or mode 0 (which dict takes for its
// default, 0600), is a usage error saying why, and no zone is made.
func TestCreateRefusesBadPerm(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct{ perm, says string }{
		{"0", `bad --perm "0": mode 0 would give the default, 0600`},
		{"0000", `bad --perm "0000": mode 0 would give the default, 0600`},
		{"999", `bad --perm "999": want an octal file mode`},
		{"01644", `bad --perm "01644": want an octal file mode`},
	} {
		_, errs, code := h.run("create", "app", "--size", "256K", "--perm", tt.perm)
		if code != exitUsage || !strings.Contains(errs, tt.says) {
			t.Errorf("create --perm %s = exit %d, stderr %q; want %d and %q", tt.perm, code, errs, exitUsage, tt.says)
		}
	}
	if entries, err := os.ReadDir(h.dir); err != nil || len(entries) != 0 {
		t.Errorf("bad --perm left %d files in the zone folder (%v)", len(entries), err)
	}
}

// create over a file that exists: a zone is "zone exists", exit 1; any
// other file, empty or holding text, is no zone, exit 4, and stays as it
// was. create once called every existing file "zone exists", and its help
// implied it took an empty file of its own.
func TestCreateOverExistingFile(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K")
	if _, errs, code := h.run("create", "app", "--size", "256K"); code != exitNo || !strings.Contains(errs, "zone exists") {
		t.Errorf("create over a zone = exit %d, stderr %q; want %d and zone exists", code, errs, exitNo)
	}
	for _, tt := range []struct{ name, content string }{{"empty", ""}, {"text", "hi\n"}} {
		path := h.path(tt.name)
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errs, code := h.run("create", tt.name, "--size", "256K")
		if want := "exists and is not a zone"; code != exitNotZone || !strings.Contains(errs, want) {
			t.Errorf("create over a %s file = exit %d, stderr %q; want %d and %q", tt.name, code, errs, exitNotZone, want)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != tt.content {
			t.Errorf("create over a %s file left %q, %v; want %q", tt.name, b, err, tt.content)
		}
	}
}
