package testutil

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestReplayCommand(t *testing.T) {
	tests := []struct {
		name               string
		test               string
		bench, short, race bool
		dir                string
		want               string
	}{
		{"top-level test", "TestModel", false, false, false, "./dict",
			`SHMZONE_SEED=123 go test -count=1 -run '^TestModel$' ./dict`},
		{"subtest", "TestModel/shards=1", false, false, false, "./dict",
			`SHMZONE_SEED=123 go test -count=1 -run '^TestModel$/^shards=1$' ./dict`},
		{"subtest of a subtest", "TestA/b/c", false, false, false, ".",
			`SHMZONE_SEED=123 go test -count=1 -run '^TestA$/^b$/^c$' .`},
		{"regexp metacharacters", "TestX/a.b*(c)|[d]+?$^{2}", false, false, false, "./slab",
			`SHMZONE_SEED=123 go test -count=1 -run '^TestX$/^a\.b\*\(c\)\|\[d\]\+\?\$\^\{2\}$' ./slab`},
		{"a quote in the name", "TestX/it's", false, false, false, "./slab",
			`SHMZONE_SEED=123 go test -count=1 -run '^TestX$/^it'\''s$' ./slab`},
		{"race and short", "TestX", false, true, true, "./counter",
			`SHMZONE_SEED=123 go test -race -short -count=1 -run '^TestX$' ./counter`},
		{"benchmark", "BenchmarkX/n=1", true, false, false, "./limiter",
			`SHMZONE_SEED=123 go test -count=1 -run '^$' -bench '^BenchmarkX$/^n=1$' ./limiter`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replayCommand(tt.test, 123, tt.bench, tt.short, tt.race, tt.dir); got != tt.want {
				t.Errorf("replayCommand(%q) =\n\t%s\nwant\n\t%s", tt.test, got, tt.want)
			}
		})
	}
}

func TestParseSeed(t *testing.T) {
	tests := []struct {
		in      string
		seed    uint64
		set, ok bool
	}{
		{"", 0, false, true},
		{"0", 0, true, true},
		{"123", 123, true, true},
		{"18446744073709551615", 1<<64 - 1, true, true},
		{"18446744073709551616", 0, false, false},
		{"-1", 0, false, false},
		{"0x10", 0, false, false},
		{" 1", 0, false, false},
		{"abc", 0, false, false},
	}
	for _, tt := range tests {
		seed, set, err := parseSeed(tt.in)
		if seed != tt.seed || set != tt.set || (err == nil) != tt.ok {
			t.Errorf("parseSeed(%q) = %d, %v, %v; want %d, %v, error %v", tt.in, seed, set, err, tt.seed, tt.set, !tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("SHMZONE_SEED=%q", tt.in)) {
			t.Errorf("parseSeed(%q) error %q does not name the variable and its value", tt.in, err)
		}
	}
}

func TestPackageDir(t *testing.T) {
	if got := packageDir(); got != "./internal/testutil" {
		t.Errorf("packageDir() = %q, want ./internal/testutil", got)
	}
}

func TestSeedFromEnv(t *testing.T) {
	t.Setenv(SeedEnv, "42")
	if got := Seed(t); got != 42 {
		t.Fatalf("Seed() with %s=42 = %d, want 42", SeedEnv, got)
	}
	t.Run("sub", func(t *testing.T) {
		if got := Seed(t); got != 42 {
			t.Fatalf("Seed() in a subtest with %s=42 = %d, want 42", SeedEnv, got)
		}
	})
}

func TestSeedSameInTestTree(t *testing.T) {
	t.Setenv(SeedEnv, "") // empty: as if unset
	first := Seed(t)
	if again := Seed(t); again != first {
		t.Fatalf("Seed() again = %d, want %d as the first call", again, first)
	}
	t.Run("sub", func(t *testing.T) {
		if got := Seed(t); got != first {
			t.Fatalf("Seed() in a subtest = %d, want its parent's %d", got, first)
		}
		if got := Seed(t); got != first {
			t.Fatalf("Seed() again in a subtest = %d, want its parent's %d", got, first)
		}
	})
}

// The environment of the processes TestSeedReplay starts: TestSeedDemo
// runs only when seedDemoEnv is set.
const seedDemoEnv = "SHMZONE_SEED_DEMO"

// TestSeedDemo is the test TestSeedReplay runs in a process of its own: a
// parent and two subtests that draw from the seed, the second failing. In
// an ordinary run it does nothing, like TestHelperProcess.
func TestSeedDemo(t *testing.T) {
	if os.Getenv(seedDemoEnv) == "" {
		return
	}
	parent := Seed(t)
	for i, name := range []string{"passes", "fails [1]"} {
		t.Run(name, func(t *testing.T) {
			seed := Seed(t)
			r := rand.New(rand.NewPCG(seed, uint64(i))) // a stream per subtest
			t.Logf("draw %s: parent %d seed %d value %d", t.Name(), parent, seed, r.Uint64())
			if strings.HasPrefix(name, "fails") {
				t.Error("failing on purpose")
			}
		})
	}
}

// runSeedDemo runs the test binary with -run pattern and SHMZONE_SEED set
// to seed (unset when empty), and returns its output; the run must fail.
func runSeedDemo(t *testing.T, pattern, seed string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.v", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, SeedEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, seedDemoEnv+"=1")
	if seed != "" {
		cmd.Env = append(cmd.Env, SeedEnv+"="+seed)
	}
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("%v with %s=%q: err = %v, want a failed test\n%s", cmd.Args, SeedEnv, seed, err, out)
	}
	return string(out)
}

var (
	replayLine = regexp.MustCompile(`replay: (SHMZONE_SEED=(\d+) go test( -race)? -count=1 -run '([^']*)' (\S+))\n`)
	drawLine   = regexp.MustCompile(`draw (\S+): parent (\d+) seed (\d+) value (\d+)\n`)
)

// TestSeedReplay runs TestSeedDemo with a random seed, takes the one
// replay command it prints, runs what it says, and checks that the failing
// subtest alone ran again and drew the same values.
func TestSeedReplay(t *testing.T) {
	out := runSeedDemo(t, "^TestSeedDemo$", "")
	cmds := replayLine.FindAllStringSubmatch(out, -1)
	if len(cmds) != 1 {
		t.Fatalf("%d replay commands, want 1, for the failing subtest alone:\n%s", len(cmds), out)
	}
	cmd, seed, race, pattern, dir := cmds[0][1], cmds[0][2], cmds[0][3] != "", cmds[0][4], cmds[0][5]
	if want := `^TestSeedDemo$/^fails_\[1\]$`; pattern != want || dir != "./internal/testutil" || race != raceEnabled {
		t.Fatalf("replay command %q: want -run '%s', package ./internal/testutil, -race %v", cmd, want, raceEnabled)
	}
	draws := map[string][]string{}
	for _, m := range drawLine.FindAllStringSubmatch(out, -1) {
		draws[m[1]] = m[2:]
		if m[2] != seed || m[3] != seed {
			t.Errorf("%s: parent seed %s, seed %s, want both %s, the replayed one", m[1], m[2], m[3], seed)
		}
	}
	if len(draws) != 2 {
		t.Fatalf("draws of %d subtests, want 2:\n%s", len(draws), out)
	}

	again := runSeedDemo(t, pattern, seed)
	redraws := drawLine.FindAllStringSubmatch(again, -1)
	if len(redraws) != 1 || redraws[0][1] != "TestSeedDemo/fails_[1]" {
		t.Fatalf("replay ran %d subtests, want TestSeedDemo/fails_[1] alone:\n%s", len(redraws), again)
	}
	if got, want := strings.Join(redraws[0][2:], " "), strings.Join(draws["TestSeedDemo/fails_[1]"], " "); got != want {
		t.Errorf("replay drew parent, seed, value %s, want %s as the first run", got, want)
	}
	if cmds := replayLine.FindAllStringSubmatch(again, -1); len(cmds) != 1 || cmds[0][1] != cmd {
		t.Errorf("replay printed %q, want the same command %q", cmds, cmd)
	}
}

// TestSeedBadEnv checks that a value of SHMZONE_SEED that is not a seed
// fails the test that asks for one, naming the variable.
func TestSeedBadEnv(t *testing.T) {
	out := runSeedDemo(t, "^TestSeedDemo$", "12x")
	if !strings.Contains(out, `SHMZONE_SEED="12x" is not a seed`) || !strings.Contains(out, "--- FAIL: TestSeedDemo") {
		t.Errorf("output with SHMZONE_SEED=12x does not fail TestSeedDemo on the variable:\n%s", out)
	}
	if strings.Contains(out, "draw ") {
		t.Errorf("subtests ran with a bad seed:\n%s", out)
	}
}
