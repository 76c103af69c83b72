package dict

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// deferSlowOK are the functions whose deferred calls may be kept on the
// stack: the compiler open-codes a function's defers only while they are
// few and its returns few, and a deferred call it keeps on the stack costs
// several nanoseconds at every return, taken or not (mutate's cost 6 ns of
// a limiter decision). Not a hot path: SetList loads whole lists.
var deferSlowOK = map[string]bool{"SetList": true}

// TestOpenCodedDefers asks the compiler (-d=defer) how it compiles each
// defer of the package and fails on one it does not open-code outside
// deferSlowOK: the operations keep their locked paths, with their many
// returns, in functions of their own (lockIncr, lockMutate, lockCAS...).
func TestOpenCodedDefers(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build with: %v", err)
		}
	}
	cmd := exec.Command(gobin, "build", "-gcflags=-d=defer", "-o", os.DevNull, ".")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build -gcflags=-d=defer: %v\n%s", err, out.String())
	}
	// "./mutate.go:101:2: stack-allocated defer", or with the package's
	// path before the file's name (GOFLAGS=-trimpath).
	line := regexp.MustCompile(`^(?:\S*/)?([^/:]+\.go):(\d+):\d+: (\S+) defer$`)
	seen := 0
	for _, l := range strings.Split(out.String(), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		seen++
		if m[3] == "open-coded" {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		fn, err := enclosingFunc(m[1], n)
		if err != nil {
			t.Fatal(err)
		}
		if !deferSlowOK[fn] {
			t.Errorf("%s:%d: the defer of %s is %s, not open-coded: move the part with the many returns to a function of its own", m[1], n, fn, m[3])
		}
	}
	if seen == 0 {
		t.Fatalf("the compiler reported no defer at all:\n%s", out.String())
	}
}

// enclosingFunc returns the name of the function declared last before line
// n of file: "push" for "func (d *Dict) push(...".
func enclosingFunc(file string, n int) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	decl := regexp.MustCompile(`^func (?:\([^)]*\) )?(\w+)`)
	name := ""
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan() && i <= n; i++ {
		if m := decl.FindStringSubmatch(sc.Text()); m != nil {
			name = m[1]
		}
	}
	if name == "" {
		return "", fmt.Errorf("%s:%d: no function declared before the line", file, n)
	}
	return name, sc.Err()
}
