package main

import (
	"testing"
	"time"
)

func TestTTL(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.advance(250 * time.Millisecond)
	var human, asJSON [][]string
	for _, k := range []string{"greeting", "pi", "hits", "queue", "\xff\xfe", "absent", "old"} {
		human = append(human, []string{"ttl", "app", k})
		asJSON = append(asJSON, []string{"ttl", "--json", "app", k})
	}
	golden(t, "ttl", h.transcript(human...))
	golden(t, "ttl_json", h.transcript(asJSON...))
}
