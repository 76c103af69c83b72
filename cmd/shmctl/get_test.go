package main

import "testing"

// fixtureKeys are the keys of the fixture zone, and two that it lacks: one
// absent, one expired.
var fixtureKeys = []string{"greeting", "hits", "pi", "on", "bin", "two words", "queue", "\xff\xfe", "absent", "old"}

func TestGet(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	var human, asJSON [][]string
	for _, k := range fixtureKeys {
		human = append(human, []string{"get", "app", k})
		asJSON = append(asJSON, []string{"get", "--json", "app", k})
	}
	golden(t, "get", h.transcript(human...))
	golden(t, "get_json", h.transcript(asJSON...))
}

func TestGetRaw(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	tests := []struct{ key, want string }{
		{"bin", "\x00\xff\x0a\x1b\x5b\x32\x6d"},
		{"greeting", "hello, <world>"},
		{"two words", ""},
		{"hits", "42\n"},
		{"pi", "3.25\n"},
		{"on", "true\n"},
	}
	for _, tt := range tests {
		if got := h.ok("get", "--raw", "app", tt.key); got != tt.want {
			t.Errorf("get --raw app %q = %q, want %q", tt.key, got, tt.want)
		}
	}
	if _, _, code := h.run("get", "--raw", "--json", "app", "bin"); code != exitUsage {
		t.Errorf("get --raw --json: exit %d, want %d", code, exitUsage)
	}
}

// TestGetCountsNothing: get reads through a read-only view, which counts no
// hit and leaves the key's place in the eviction order.
func TestGetCountsNothing(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	d := h.dict("app")
	defer d.Close()
	before := d.Stats()
	h.ok("get", "app", "hits")
	h.run("get", "app", "absent")
	if after := d.Stats(); after != before {
		t.Errorf("get changed the zone's figures: %+v, then %+v", before, after)
	}
}
