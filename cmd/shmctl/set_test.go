package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	golden(t, "set", h.transcript(
		[]string{"set", "app", "s", "hello world"},
		[]string{"set", "app", "n", "-5", "--kind", "int", "--flags", "2"},
		[]string{"set", "app", "f", "-1e-3", "--kind=float", "--ttl", "90"},
		[]string{"set", "app", "b", "false", "--kind", "bool", "--ttl", "1m30s"},
		[]string{"set", "app", "raw", "AP8=", "--base64"},
		[]string{"set", "--", "app", "--dash", "-v"},
		[]string{"set", "app", "s", "replaced", "--safe"},
		[]string{"get", "app", "s"},
		[]string{"get", "app", "n"},
		[]string{"get", "app", "f"},
		[]string{"get", "app", "b"},
		[]string{"get", "app", "raw"},
		[]string{"get", "--", "app", "--dash"},
		[]string{"set", "app", "x", "1", "--kind", "int", "--base64"},
		[]string{"set", "app", "x", "maybe", "--kind", "bool"},
		[]string{"set", "app", "x", "!!", "--base64"},
	))
}

// TestSetEvicts fills a zone: set evicts and says so on stderr, set --safe
// refuses with exit 8 and leaves the key as it was.
func TestSetEvicts(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "72K", "--shards", "1")
	big := strings.Repeat("x", 8<<10)
	h.ok("set", "app", "keep", "old")
	for i := 0; ; i++ {
		_, errs, code := h.run("set", "app", "k"+strconv.Itoa(i), big, "--safe")
		if code == exitFail && strings.Contains(errs, "no memory") && i > 0 {
			break
		}
		if code != 0 || i > 20 {
			t.Fatalf("set --safe of value %d: exit %d, %q; want 0 until the zone is full, then 8", i, code, errs)
		}
	}
	if _, errs, code := h.run("set", "app", "keep", big, "--safe"); code != exitFail || !strings.Contains(errs, "no memory") {
		t.Errorf("set --safe in a full zone: exit %d, %q; want 8 and no memory", code, errs)
	}
	if got := h.ok("get", "--raw", "app", "keep"); got != "old" {
		t.Errorf("after a failed set --safe, keep = %q, want old", got)
	}
	if _, errs, code := h.run("set", "app", "e", big); code != 0 || !strings.Contains(errs, "evicted") {
		t.Errorf("set in a full zone: exit %d, stderr %q; want 0 and a note of the eviction", code, errs)
	}
}
