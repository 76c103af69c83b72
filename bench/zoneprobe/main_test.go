package main

import (
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestRunRefusesBadArguments(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-size", "0"}, "-size 0"},
		{[]string{"-size", "65537"}, "-size 65537"},
		{[]string{"-keys", "0"}, "-keys 0"},
		{[]string{"-op", "set"}, `-op "set"`},
		{[]string{"-n", "0"}, "-n 0"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-size", "ten"}, "invalid value"},
		{[]string{"-n", "1", "-dir", "/nonexistent/zoneprobe"}, "/nonexistent/zoneprobe"},
	} {
		var out strings.Builder
		args := append([]string{"-dir", t.TempDir()}, tt.args...)
		err := run(args, &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error naming %q", tt.args, err, tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) printed %q", tt.args, out.String())
		}
	}
}

func TestRunPrintsNsPerOp(t *testing.T) {
	for _, op := range []string{"incr", "get"} {
		var out strings.Builder
		if err := run([]string{"-size", "2", "-keys", "100", "-op", op, "-n", "1000", "-dir", t.TempDir()}, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		ns, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
		if err != nil || !(ns > 0) {
			t.Fatalf("%s printed %q, want a positive ns/op", op, out.String())
		}
	}
}

func TestRunRefusesKeysThatDoNotFit(t *testing.T) {
	err := run([]string{"-size", "2", "-keys", "100000", "-n", "1", "-dir", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Fatalf("100,000 keys in a 2 MiB zone: %v, want an error that they do not fit", err)
	}
}
