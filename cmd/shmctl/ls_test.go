package main

import (
	"os"
	"testing"
)

func TestLs(t *testing.T) {
	h := newHarness(t)
	h.fixture()
	h.ok("create", "empty", "--size", "1M", "--shards", "2")
	os.WriteFile(h.path("junk"), []byte("not a zone"), 0o600)
	os.WriteFile(h.dir+"/notes.txt", []byte("not listed"), 0o600)
	writeOtherLayout(t, h.path("other"))
	golden(t, "ls", h.transcript([]string{"ls"}, []string{"ls", h.dir + "/nothing"}))
	golden(t, "ls_json", h.transcript([]string{"ls", "--json", h.dir}))
}
