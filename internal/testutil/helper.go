package testutil

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The environment that tells a re-executed test binary it is a helper.
const (
	envName = "SHMZONE_HELPER"      // the helper's name
	envArgs = "SHMZONE_HELPER_ARGS" // its arguments, a JSON array of strings
)

// Helper returns a command that runs the test binary as the helper called
// name with args. The command runs only TestHelperProcess. Its environment
// names the helper. The caller may set the command's Stdin, Stderr and Env
// additions before passing it to Start. The helper dies with the test
// process (Pdeathsig). A race-enabled helper exits without the race
// detector's pause of a second.
func Helper(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	if args == nil {
		args = []string{}
	}
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("testutil: helper %s args: %v", name, err)
	}
	return childCmd("-test.run=^TestHelperProcess$", envName+"="+name, envArgs+"="+string(enc))
}

// childCmd returns a command that runs this test binary with run, its
// -test.run flag, and env added to the environment. The child dies with
// its parent, and a race-enabled one does not sleep a second before a
// clean exit, as the race detector makes a process do to catch races at
// exit: children exit often and their parent waits.
func childCmd(run string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], run, "-test.count=1")
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(append(os.Environ(), env...), "GORACE="+gorace)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// IsHelper reports whether this process is a helper, and if so its name and
// arguments. An ordinary test run gets ok false.
func IsHelper() (name string, args []string, ok bool) {
	name = os.Getenv(envName)
	if name == "" {
		return "", nil, false
	}
	if err := json.Unmarshal([]byte(os.Getenv(envArgs)), &args); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: helper %s: bad %s: %v\n", name, envArgs, err)
		os.Exit(2)
	}
	return name, args, true
}

// RunHelper is the body of a package's TestHelperProcess. In an ordinary
// test run it returns at once. In a helper process it runs the function
// registered under the helper's name, and exits. It exits 0 when the
// function returns nil. It exits 1 with the error on stderr when it fails.
// It exits 2 when no function has the name. It never returns in a helper
// process.
func RunHelper(helpers map[string]func(args []string) error) {
	name, args, ok := IsHelper()
	if !ok {
		return
	}
	fn, found := helpers[name]
	if !found {
		fmt.Fprintf(os.Stderr, "testutil: no helper %q\n", name)
		os.Exit(2)
	}
	if err := mountOwnProc(); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: helper %s: %v\n", name, err)
		os.Exit(2)
	}
	if err := fn(args); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TempZone returns the path of a zone file that does not exist yet. The
// directory is removed when the test ends.
func TempZone(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.zone")
}
