package testutil

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// SeedEnv names the one switch that replays randomness: when it holds a
// number, Seed returns that number in every test of every package, so
//
//	SHMZONE_SEED=123 go test -count=1 -run '^TestModel$/^shards=16$/^no-evict$' ./dict
//
// replays what a failing run printed. An environment variable, not a flag,
// because it works with go test ./... (a flag defined by one test package is
// unknown to the others' binaries and fails them) and because it reaches the
// helper processes a test re-executes.
const SeedEnv = "SHMZONE_SEED"

// raceEnabled is set by seed_race.go in a race-enabled binary, so that the
// replay command builds one too.
var raceEnabled bool

// seeds holds the seed of every test running that called Seed, by name, so
// that a second call and a subtest's call return the same seed.
var seeds = struct {
	sync.Mutex
	byName map[string]*seedEntry
}{byName: map[string]*seedEntry{}}

type seedEntry struct {
	seed     uint64
	replayed bool // a failing subtest printed its own replay command
}

// Seed returns the seed of t's randomness, the one number from which t
// draws every random choice: rand.New(rand.NewPCG(seed, 0)) for one stream,
// rand.NewPCG(seed, uint64(i)) for the i-th of several (one per worker,
// per helper process); a helper process gets the seed and its stream
// number as arguments, never a seed of its own.
//
// The seed is the value of SHMZONE_SEED (SeedEnv) when it is set and not
// empty, a fresh random number otherwise. A value that is not a decimal
// uint64 fails t at once. Seed logs the seed, and when t fails it logs the
// one command that replays t:
//
//	replay: SHMZONE_SEED=123 go test -count=1 -run '^TestX$/^sub$' ./dict
//
// to run from the module's root (with -race or -short when t ran with them).
//
// Calling Seed again in the same test returns the same seed, and so does
// calling it in a subtest of a test that called it: a whole test tree
// shares one seed, so that the command a failing subtest prints, which runs
// its parent again with the same seed, reproduces what the subtest saw.
// Subtests whose parent did not call Seed get seeds of their own. When a
// subtest prints its replay command, its ancestors print none.
//
// Seed may be called from many goroutines, and by parallel tests.
func Seed(t testing.TB) uint64 {
	t.Helper()
	name := t.Name()
	seeds.Lock()
	if e, ok := seeds.byName[name]; ok {
		seeds.Unlock()
		return e.seed
	}
	e, inherited := seedAncestorLocked(name)
	if !inherited {
		s, set, err := parseSeed(os.Getenv(SeedEnv))
		if err != nil {
			seeds.Unlock()
			t.Fatalf("testutil: %v", err)
		}
		if !set {
			s = rand.Uint64()
		}
		e = &seedEntry{seed: s}
	}
	seeds.byName[name] = &seedEntry{seed: e.seed}
	seeds.Unlock()

	t.Logf("seed %d (%s)", e.seed, SeedEnv)
	_, bench := t.(*testing.B)
	t.Cleanup(func() {
		seeds.Lock()
		mine := seeds.byName[name]
		delete(seeds.byName, name)
		show := t.Failed() && !mine.replayed
		if show {
			for a := parentName(name); a != ""; a = parentName(a) {
				if e, ok := seeds.byName[a]; ok {
					e.replayed = true
				}
			}
		}
		seeds.Unlock()
		if show {
			t.Logf("replay: %s", replayCommand(name, mine.seed, bench, testing.Short(), raceEnabled, packageDir()))
		}
	})
	return e.seed
}

// seedAncestorLocked returns the entry of the nearest test above name that
// called Seed. It needs seeds locked.
func seedAncestorLocked(name string) (*seedEntry, bool) {
	for a := parentName(name); a != ""; a = parentName(a) {
		if e, ok := seeds.byName[a]; ok {
			return e, true
		}
	}
	return nil, false
}

// parentName returns the name of the test above name, "" for a top-level
// test. A subtest's name may itself hold slashes; the names it then yields
// are not tests and match nothing.
func parentName(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// parseSeed parses the value of SeedEnv: set is false when s is empty.
func parseSeed(s string) (seed uint64, set bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	seed, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s=%q is not a seed: want a decimal number from 0 to %d", SeedEnv, s, uint64(1<<64-1))
	}
	return seed, true, nil
}

// replayCommand returns the go test command that runs the test called name
// (as t.Name() gives it), alone, with seed, in the package at dir (relative
// to the module's root). -run matches a name level by level, split at
// slashes, so each level is anchored and quoted on its own: ^A$/^B$.
func replayCommand(name string, seed uint64, bench, short, race bool, dir string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	pattern := shellQuote(strings.Join(levels, "/"))
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%d go test", SeedEnv, seed)
	if race {
		b.WriteString(" -race")
	}
	if short {
		b.WriteString(" -short")
	}
	b.WriteString(" -count=1")
	if bench {
		fmt.Fprintf(&b, " -run '^$' -bench %s", pattern)
	} else {
		fmt.Fprintf(&b, " -run %s", pattern)
	}
	b.WriteString(" " + dir)
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// packageDir returns the directory of the package under test, where go test
// runs its binary, relative to the module's root ("./dict"), or absolute
// when no go.mod is found above it.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, wd)
			if err != nil {
				return wd
			}
			if rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return wd
		}
		root = up
	}
}
