package main

import "testing"

func TestKeys(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	golden(t, "keys", h.transcript(
		[]string{"keys", "app"},
		[]string{"keys", "--long", "app"},
		[]string{"keys", "app", "--prefix", "g"},
		[]string{"keys", "app", "--limit", "2"},
	))
	golden(t, "keys_json", h.transcript(
		[]string{"keys", "--json", "app"},
		[]string{"keys", "--json", "--prefix", "nothing", "app"},
	))
}
