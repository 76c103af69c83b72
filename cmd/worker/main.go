// Command worker runs shmzone's multi-process programs: "worker bench"
// measures a backend from several processes, and other verbs register
// themselves from their own files. Run "worker" alone for the list.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// verb is one subcommand: run gets the arguments after the verb's name and
// the writers to use, and returns the exit code.
type verb struct {
	run     func(args []string, stdout, stderr io.Writer) int
	summary string
}

var (
	verbs    = map[string]verb{}
	children = map[string]func() int{}
)

// childEnv names the environment variable that makes worker run as a child
// of one of its own verbs instead of parsing its arguments.
const childEnv = "WORKER_CHILD"

// register adds a verb; each verb's file calls it from init.
func register(name string, v verb) { verbs[name] = v }

// registerChild adds the entry point worker runs when re-executed with
// WORKER_CHILD=name.
func registerChild(name string, fn func() int) { children[name] = fn }

func main() { os.Exit(dispatch(os.Getenv(childEnv), os.Args[1:], os.Stdout, os.Stderr)) }

// dispatch runs the child named by child when set, else the verb args[0].
func dispatch(child string, args []string, stdout, stderr io.Writer) int {
	if child != "" {
		fn, ok := children[child]
		if !ok {
			fmt.Fprintf(stderr, "worker: unknown %s=%q\n", childEnv, child)
			return 2
		}
		return fn()
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		return 2
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "worker: unknown verb %q\n", args[0])
		usage(stderr)
		return 2
	}
	return v.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: worker VERB [flags]; worker VERB -h for a verb's flags")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, verbs[n].summary)
	}
}
