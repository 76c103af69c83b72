package main

import (
	"testing"
	"time"
)

func TestExpire(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	golden(t, "expire", h.transcript(
		[]string{"expire", "app", "hits", "30s"},
		[]string{"ttl", "app", "hits"},
		[]string{"expire", "app", "queue", "5"},
		[]string{"ttl", "app", "queue"},
		[]string{"expire", "app", "greeting", "0"},
		[]string{"ttl", "app", "greeting"},
		[]string{"expire", "app", "absent", "1s"},
		[]string{"expire", "app", "old", "1m"},
		[]string{"expire", "app", "hits", "soon"},
	))
	h.advance(5 * time.Second)
	if _, _, code := h.run("get", "app", "queue"); code != exitNo {
		t.Errorf("queue 5s after expire 5: exit %d, want 1", code)
	}
}
