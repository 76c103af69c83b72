package main

import (
	"bytes"
	"io"
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

func TestDispatchNoVerbListsVerbs(t *testing.T) {
	register("zz-test", verb{run: func([]string, io.Writer, io.Writer) int { return 7 }, summary: "a test verb"})
	defer delete(verbs, "zz-test")
	var out, errb bytes.Buffer
	if code := dispatch("", nil, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), "zz-test") || !strings.Contains(errb.String(), "a test verb") {
		t.Fatalf("usage %q does not list the verb", errb.String())
	}
	if code := dispatch("", []string{"zz-test"}, &out, &errb); code != 7 {
		t.Fatalf("verb exit %d, want 7", code)
	}
}

func TestDispatchChild(t *testing.T) {
	registerChild("zz-test", func() int { return 5 })
	defer delete(children, "zz-test")
	var out, errb bytes.Buffer
	if code := dispatch("zz-test", []string{"ignored"}, &out, &errb); code != 5 {
		t.Fatalf("child exit %d, want 5", code)
	}
	if code := dispatch("nope", nil, &out, &errb); code != 2 {
		t.Fatalf("unknown child exit %d, want 2", code)
	}
}
