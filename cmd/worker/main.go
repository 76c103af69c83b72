// Command worker runs shmzone's multi-process programs: "worker bench"
// measures a backend from several processes, and "worker serve" runs a
// prefork HTTP server whose children share one rate limit. "worker help"
// lists the verbs.
package main

import (
	"fmt"
	"io"
	"os"
)

// verb is one subcommand: run gets the arguments after the verb's name and
// the writers to use, and returns the exit code; child, when not nil, is
// what worker runs when the verb re-executes it as its child.
type verb struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
	child   func() int
}

// verbs are worker's verbs, in the order its usage lists them.
var verbs = []verb{
	{"bench", "measure ops/s of a backend from several processes", benchMain, benchChild},
	{"serve", "prefork HTTP server whose children share one rate limit", runServe, serveChild},
}

// childEnv names the environment variable that makes worker run as a child
// of one of its own verbs instead of parsing its arguments.
const childEnv = "WORKER_CHILD"

func main() { os.Exit(dispatch(os.Getenv(childEnv), os.Args[1:], os.Stdout, os.Stderr)) }

// lookup returns the verb named name.
func lookup(name string) (verb, bool) {
	for _, v := range verbs {
		if v.name == name {
			return v, true
		}
	}
	return verb{}, false
}

// dispatch runs the child named by child when set, else the verb args[0].
// help lists the verbs on stdout and exits 0; no verb lists them on stderr
// and exits 2.
func dispatch(child string, args []string, stdout, stderr io.Writer) int {
	if child != "" {
		v, ok := lookup(child)
		if !ok || v.child == nil {
			fmt.Fprintf(stderr, "worker: unknown %s=%q\n", childEnv, child)
			return 2
		}
		return v.child()
	}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	v, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "worker: unknown verb %q\n", args[0])
		usage(stderr)
		return 2
	}
	return v.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: worker VERB [flags]; worker VERB -h for a verb's flags")
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-8s %s\n", v.name, v.summary)
	}
}
