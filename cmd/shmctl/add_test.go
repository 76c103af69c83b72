package main

import (
	"testing"
	"time"
)

func TestAdd(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	h.ok("set", "app", "short", "x", "--ttl", "1s")
	h.advance(time.Second)
	golden(t, "add", h.transcript(
		[]string{"add", "app", "k", "first", "--flags", "1"},
		[]string{"add", "app", "k", "second"},
		[]string{"get", "app", "k"},
		[]string{"add", "app", "short", "7", "--kind", "int", "--ttl", "5s"}, // expired: absent
		[]string{"get", "app", "short"},
		[]string{"add", "app", "k", "x", "--safe"},
	))
}
