package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestMain lets verbs re-execute the test binary as their children: with
// WORKER_CHILD set it runs the child, as main would, instead of the tests.
func TestMain(m *testing.M) {
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(dispatch(child, nil, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestDispatchUnknownVerb(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch("", []string{"nope"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), `unknown verb "nope"`) {
		t.Fatalf("stderr %q", errb.String())
	}
}

// worker alone lists the verbs, in order, on stderr and exits 2; help
// lists them on stdout and exits 0, as shmctl's does.
func TestDispatchListsVerbs(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch("", nil, &out, &errb); code != 2 || out.Len() != 0 {
		t.Fatalf("worker alone: exit %d, stdout %q; want 2 and nothing", code, out.String())
	}
	if i, j := strings.Index(errb.String(), "bench"), strings.Index(errb.String(), "serve"); i < 0 || j < i {
		t.Fatalf("usage %q does not list bench, then serve", errb.String())
	}
	for _, help := range []string{"help", "-h", "--help"} {
		out.Reset()
		errb.Reset()
		if code := dispatch("", []string{help}, &out, &errb); code != 0 || !strings.Contains(out.String(), "serve") || errb.Len() != 0 {
			t.Errorf("worker %s: exit %d, stdout %q, stderr %q; want 0 and the verbs on stdout", help, code, out.String(), errb.String())
		}
	}
}

func TestDispatchChild(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch("nope", nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown WORKER_CHILD="nope"`) {
		t.Fatalf("unknown child: exit %d, stderr %q; want 2", code, errb.String())
	}
}
