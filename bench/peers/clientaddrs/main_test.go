package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/internal/clients"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-seed", "3", "-stream", "1", "-n", "5"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(clients.Addrs(3, 1, 5), "\n") + "\n"
	if out.String() != want {
		t.Errorf("run -seed 3 -stream 1 -n 5 = %q, want %q", out.String(), want)
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no keys", []string{"-n", "0"}},
		{"argument", []string{"extra"}},
		{"bad seed", []string{"-seed", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := run(tc.args, io.Discard, io.Discard); err == nil {
				t.Errorf("run(%q) = nil, want an error", tc.args)
			}
		})
	}
}
