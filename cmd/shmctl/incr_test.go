package main

import (
	"fmt"
	"strings"
	"testing"
)

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

// TestIncrPrintsSumAsStored prints the sum as the key holds it after the
// increment, as get prints it: a float with its fraction (Incr's int64 sum
// truncates it), an int exactly at any size (a float64 would round one
// beyond 2^53).
func TestIncrPrintsSumAsStored(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	tests := []struct {
		name string
		set  []string // the key's value and kind
		incr []string // incr's operands and flags after ZONE KEY
		want string
	}{
		{"float plus int", []string{"2.5", "--kind", "float"}, nil, "3.5"},
		{"float minus int", []string{"2.5", "--kind", "float"}, []string{"-4"}, "-1.5"},
		{"float with init", []string{"2.5", "--kind", "float"}, []string{"--init", "0"}, "3.5"},
		{"whole float", []string{"2", "--kind", "float"}, nil, "3"},
		{"float plus float", []string{"2.5", "--kind", "float"}, []string{"0.25", "--float"}, "2.75"},
		{"int beyond 2^53", []string{"9007199254740991", "--kind", "int"}, []string{"2"}, "9007199254740993"},
		{"int with init beyond 2^53", []string{"9007199254740991", "--kind", "int"}, []string{"2", "--init", "0"}, "9007199254740993"},
		{"largest int", []string{"9223372036854775806", "--kind", "int"}, nil, "9223372036854775807"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			h.ok(append([]string{"set", "app", key}, tt.set...)...)
			args := append([]string{"incr", "app", key}, tt.incr...)
			if got := h.ok(args...); got != tt.want+"\n" {
				t.Errorf("shmctl %s = %q, want %q", strings.Join(args, " "), got, tt.want+"\n")
			}
			if got := h.ok("get", "app", key); !strings.HasSuffix(strings.Fields(got)[1], tt.want) {
				t.Errorf("shmctl get app %s = %q after the increment, want the value %s", key, got, tt.want)
			}
		})
	}
}

// TestIncrFloatBeyondInt64 refuses a float whose sum with an int delta no
// int64 holds with exit 8, as the help says, and an error that tells the
// shmctl way to add to it, not a Go function's name; --float adds to it.
func TestIncrFloatBeyondInt64(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "app", "--size", "256K", "--shards", "1")
	h.ok("set", "app", "f", "1e300", "--kind", "float")
	for _, args := range [][]string{{"incr", "app", "f"}, {"incr", "app", "f", "--init", "0"}} {
		out, errs, code := h.run(args...)
		if code != exitFail || out != "" || !strings.Contains(errs, "shmctl incr --float") || strings.Contains(errs, "IncrFloat") {
			t.Errorf("shmctl %s: exit %d, stdout %q, stderr %q; want exit %d and an error that points to --float",
				strings.Join(args, " "), code, out, errs, exitFail)
		}
	}
	if help := strings.Join(strings.Fields(h.ok("incr", "--help")), " "); !strings.Contains(help, "8 when KEY holds bytes, a bool or a list, or a float whose sum with an int DELTA no int64 holds") {
		t.Errorf("shmctl incr --help does not list a float beyond int64 under exit %d", exitFail)
	}
	if got := h.ok("get", "app", "f"); got != "float 1e+300 flags=0 ttl=never\n" {
		t.Errorf("shmctl get app f = %q after the refused increments, want float 1e+300", got)
	}
	if got := h.ok("incr", "app", "f", "1", "--float"); got != "1e+300\n" {
		t.Errorf("shmctl incr app f 1 --float = %q, want 1e+300", got)
	}
}
