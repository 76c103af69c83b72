package main

import "testing"

func TestInfo(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.ok("get", "app", "hits") // read-only: counts nothing
	d := h.dict("app")
	d.Get("hits")
	d.Get("absent")
	d.Close()
	golden(t, "info", h.transcript([]string{"info", "app"}, []string{"info", "--shards", "app"}))
	golden(t, "info_json", h.transcript([]string{"info", "--json", "app"}, []string{"info", "--json", "--shards", "app"}))
}
