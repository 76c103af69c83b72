package dict_test

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// helperSizeOpen opens the zone at args[0] with Options.Size args[1],
// prints "size N" with the size in force, and closes it. It fails with
// Open's error.
func helperSizeOpen(args []string) error {
	size, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{Size: size})
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Printf("size %d\n", d.Size())
	return d.Check()
}

// TestOpenSizeProcs checks Open's size check across processes: one
// process creates a zone, then others open it with another size and with
// Size 0.
func TestOpenSizeProcs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "z.zone")
	const created, other = 1<<20 + 12345, 4 << 20
	run := func(size int64) (string, string, error) {
		cmd := testutil.Helper(t, "size-open", path, strconv.FormatInt(size, 10))
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run(created)
	if err != nil {
		t.Fatalf("helper creating the zone with Size %d: %v\n%s", created, err, errOut)
	}
	var size int64
	if _, err := fmt.Sscanf(out, "size %d", &size); err != nil || size <= 0 || size > created {
		t.Fatalf("helper creating the zone printed %q, want \"size N\" with 0 < N <= %d", out, created)
	}

	_, errOut, err = run(other)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("helper opening with Size %d: %v, want exit code 1\n%s", other, err, errOut)
	}
	checkSizeError(t, errors.New(errOut), path, size, other)

	out, errOut, err = run(0)
	if err != nil {
		t.Fatalf("helper opening with Size 0: %v\n%s", err, errOut)
	}
	if want := fmt.Sprintf("size %d\n", size); out != want {
		t.Errorf("helper opening with Size 0 printed %q, want %q", out, want)
	}
}
