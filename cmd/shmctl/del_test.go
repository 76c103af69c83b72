package main

import "testing"

func TestDel(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	golden(t, "del", h.transcript(
		[]string{"del", "app", "hits", "queue", "absent"},
		[]string{"keys", "app"},
		[]string{"del", "app"},
	))
}
