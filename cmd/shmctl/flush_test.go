package main

import (
	"testing"
	"time"
)

func TestFlush(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.advance(2 * time.Second) // pi expires too, with old
	golden(t, "flush", h.transcript(
		[]string{"info", "app"},
		[]string{"flush", "--expired", "app"},
		[]string{"flush", "--expired", "app"},
		[]string{"keys", "app"},
		[]string{"flush", "app"},
		[]string{"keys", "app"},
		[]string{"info", "app"},
	))
}
