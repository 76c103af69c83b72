package main

import "testing"

func TestIncr(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	h.ok("set", "app", "n", "40", "--kind", "int", "--flags", "5", "--ttl", "1m")
	h.ok("set", "app", "f", "1.5", "--kind", "float")
	h.ok("set", "app", "s", "text")
	golden(t, "incr", h.transcript(
		[]string{"incr", "app", "n"},
		[]string{"incr", "app", "n", "10"},
		[]string{"incr", "app", "n", "-60"},
		[]string{"get", "app", "n"},
		[]string{"incr", "app", "f", "2"},
		[]string{"incr", "app", "f", "0.25", "--float"},
		[]string{"incr", "--float", "app", "n", "-0.5"},
		[]string{"incr", "app", "new"},
		[]string{"incr", "app", "new", "--init", "100", "--ttl", "30s"},
		[]string{"incr", "app", "new", "--init", "100", "5"},
		[]string{"get", "app", "new"},
		[]string{"incr", "app", "s"},
		[]string{"incr", "app", "n", "x"},
		[]string{"incr", "app", "n", "--ttl", "5s"},
		[]string{"incr", "app", "n", "--init", "1", "--float"},
	))
}
