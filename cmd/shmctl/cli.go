package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
	"golang.org/x/sys/unix"
)

// env is what a verb runs with: its streams, its clock and the terminal it
// writes to. main fills it from the process; tests inject their own.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// clock is the dictionaries' clock in Unix ms; nil is the system's.
	clock func() int64
	// sleep waits between watch's samples; nil is time.Sleep.
	sleep func(time.Duration)
	// mono reads a monotonic clock, the time since any fixed start, which
	// no step of the wall clock moves: watch's intervals are measured by
	// it. nil is the system's (time.Since on a time.Now value). A test that
	// injects sleep and clock injects it too, moved by its sleep.
	mono func() time.Duration
	// terminal says stdout is a terminal: watch redraws in place.
	terminal bool
	// opened, when set, is told of every dictionary a verb opens.
	opened func(d *dict.Dict)
}

// now returns the time in Unix ms by the env's clock.
func (e *env) now() int64 {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now().UnixMilli()
}

// monoStart is the start of the system's monotonic readings: time.Now
// carries a monotonic reading, which time.Since subtracts.
var monoStart = time.Now()

// monoNow returns the time since a fixed start by the env's monotonic
// clock, for measuring intervals; wall time (now) is for timestamps.
func (e *env) monoNow() time.Duration {
	if e.mono != nil {
		return e.mono()
	}
	return time.Since(monoStart)
}

// command is one verb of shmctl.
type command struct {
	name    string
	args    string // the operands, for the usage line: "ZONE KEY"
	summary string // one line, for shmctl's list of verbs
	help    string // what the verb does, printed by --help
	min     int    // fewest operands
	max     int    // most operands; -1 for any number
	// flags defines the verb's flags on fs and returns the function that
	// runs the verb with its operands, once the flags are parsed.
	flags func(fs *flag.FlagSet) func(e *env, args []string) error
}

// commands are shmctl's verbs, in the order its usage lists them.
var commands = []*command{
	createCmd, lsCmd, infoCmd, getCmd, setCmd, addCmd, incrCmd, delCmd,
	ttlCmd, expireCmd, keysCmd, flushCmd, checkCmd, dumpCmd, restoreCmd,
	watchCmd, limitsCmd, rmCmd,
}

// Exit codes. They are part of the interface: scripts test them.
const (
	exitOK      = 0 // done
	exitNo      = 1 // the answer is no: key not found or expired, key or zone exists, check found problems
	exitUsage   = 2 // bad arguments: unknown verb or flag, wrong operands, a value that does not parse
	exitNoZone  = 3 // no such zone file; watch: the zone was removed or replaced
	exitNotZone = 4 // the file is not a zone (or not a regular file)
	exitVersion = 5 // the zone was written by an incompatible version or layout
	exitCorrupt = 6 // the zone is corrupt; check --repair may fix its entries
	exitPerm    = 7 // permission denied
	exitFail    = 8 // anything else: zone full, value not a number or a list, no folder to create a zone in, I/O
	exitBusy    = 9 // a live process held a shard's lock past the lock timeout
)

const exitCodesHelp = `Exit codes:
  0  done
  1  no: key not found or expired, key or zone exists, check found problems
  2  bad arguments
  3  no such zone (watch: the zone was removed or replaced while watched)
  4  not a zone file
  5  incompatible zone version
  6  zone corrupt (try: shmctl check --repair ZONE)
  7  permission denied
  8  other failure (zone full, wrong kind of value, no such folder, I/O)
  9  zone busy: a live process held a shard's lock, or kept changing the
     shard, past the lock timeout; a write that timed out changed nothing
`

// usageError is a bad command line; it exits 2 with the verb's usage.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errProblems is returned by check when it found problems; they are printed.
var errProblems = errors.New("problems found")

// exitCode returns the exit code for a verb's error.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u), errors.Is(err, dict.ErrEmptyKey), errors.Is(err, dict.ErrKeyTooLong),
		errors.Is(err, dict.ErrBadTTL):
		return exitUsage
	case errors.Is(err, errProblems), errors.Is(err, dict.ErrNotFound), errors.Is(err, dict.ErrExists),
		errors.Is(err, errZoneExists):
		return exitNo
	case errors.Is(err, errZoneRemoved), errors.Is(err, errZoneReplaced):
		return exitNoZone
	case errors.Is(err, dict.ErrLockTimeout):
		return exitBusy
	}
	if code := zoneExitCode(err); code != 0 {
		return code
	}
	return exitFail
}

// run runs shmctl with its arguments, without the program name, and returns
// the exit code.
func run(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "-help" || name == "--help" {
		if len(args) > 1 && name == "help" {
			return run([]string{args[1], "--help"}, e)
		}
		usage(e.stdout)
		return exitOK
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(e.stderr, "shmctl: unknown verb %q\n\n", name)
		usage(e.stderr)
		return exitUsage
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints errors and usage itself
	verb := c.flags(fs)
	operands, err := parseArgs(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		c.usage(e.stdout, fs)
		return exitOK
	}
	if err == nil && (len(operands) < c.min || c.max >= 0 && len(operands) > c.max) {
		err = usagef("want %s, got %d operand(s)", c.args, len(operands))
	}
	if err == nil {
		err = runVerb(verb, e, operands)
	}
	code := exitCode(err)
	if err != nil && !errors.Is(err, errProblems) {
		fmt.Fprintf(e.stderr, "shmctl %s: %v\n", c.name, err)
	}
	switch code {
	case exitUsage:
		fmt.Fprintf(e.stderr, "Usage: shmctl %s [flags] %s (shmctl %[1]s --help tells more)\n", c.name, c.args)
	case exitBusy:
		fmt.Fprintf(e.stderr, "shmctl %s: zone busy: a live process held a shard's lock for %v (stopped, or stuck in a write), or the shard kept changing; a write that timed out changed nothing\n", c.name, dict.DefaultLockTimeout)
	}
	return code
}

// runVerb runs a verb, turning a fault in a zone's mapping (a zone file
// truncated while mapped, or a sparse one its filesystem cannot back) into
// an error rather than a crash.
func runVerb(verb func(*env, []string) error, e *env, operands []string) (err error) {
	defer shm.CatchFault(&err, shm.GuardFaults())
	return verb(e, operands)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usage writes shmctl's usage: its verbs, how zones are named, exit codes.
func usage(w io.Writer) {
	fmt.Fprint(w, `shmctl manages shmzone zone files: create, inspect, edit, check, move.

Usage: shmctl VERB [flags] OPERANDS

Flags may come before or after the operands; "--" ends them, for an operand
that starts with a dash: shmctl get -- app -key.

Verbs:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
A ZONE is a name, resolved as $SHMZONE_DIR/NAME.zone (default /dev/shm), or a
path holding a slash. "shmctl VERB --help" describes a verb and its flags.

The read verbs (ls, info, get, ttl, keys, check, dump, watch) map the zone
read-only and take no lock: they never change it, and may see a write that
is in progress at that instant. keys, dump and check copy each shard
between two of its changes, so they wait for a shard whose lock a live
process holds, up to the lock timeout (1s), and then exit 9.

`, exitCodesHelp)
}

// usage writes a verb's usage, its help and its flags.
func (c *command) usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: shmctl %s [flags] %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// parseArgs parses flags and operands in any order (the flag package stops
// at the first operand), and takes a negative number for an operand, as in
// "incr ZONE KEY -1". After "--" everything is an operand.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for len(args) > 0 {
		// Find the flags before the next operand: a flag that takes a
		// value and has no "=" takes the next argument with it.
		i := 0
		for i < len(args) && isFlag(args[i]) {
			name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
			i++
			if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) {
				i++
			}
		}
		if i > len(args) {
			i = len(args)
		}
		if err := fs.Parse(args[:i]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = args[i:]
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			return append(operands, args[1:]...), nil
		}
		operands = append(operands, args[0])
		args = args[1:]
	}
	return operands, nil
}

// isFlag reports whether an argument is a flag: it starts with "-" and is
// neither "-", "--" nor a number.
func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return false
	}
	_, err := strconv.ParseFloat(a, 64)
	return err != nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// osEnv is the env of the shmctl process.
func osEnv() *env {
	return &env{
		stdin:    os.Stdin,
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		terminal: isTerminal(os.Stdout),
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
