package shmzone_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// installMain is the program TestReadmeInstall builds: it imports the core
// module and an adapter module, as a user's program does.
const installMain = `package main

import (
	"fmt"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
)

func main() {
	fmt.Println(dict.Options{}.Size, shmfasthttp.Options{}.NoHeaders)
}
`

// TestReadmeInstall runs the README's install steps, the first sh block
// after "## Install", in a new module outside the checkout. It sets
// SHMZONE to this checkout in place of the README's example path. Then it
// builds a program that imports the core module and contrib/fasthttp.
// Third-party modules come from the machine's module proxy; the shmzone
// modules can only come from the replace lines, since no proxy has them.
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program in a new module")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, ok := installSteps(string(b))
	if !ok {
		t.Fatal("README.md: no sh block under ## Install")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	script, ok := setCheckout(steps, root)
	if !ok {
		t.Fatalf("README.md: the install steps set no SHMZONE=…:\n%s", steps)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to build with: %v", err)
		}
	}
	proxy, err := exec.Command(gobin, "env", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env GOPROXY: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(installMain), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+filepath.Dir(gobin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOFLAGS=-mod=mod",
		"GOPROXY="+strings.TrimSpace(string(proxy)),
		"GOWORK=off",
	)
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
	}
	run("sh", "-e", "-x", "-c", script)
	run(gobin, "build", "-o", os.DevNull, ".")
}

// installSteps returns the first sh block after the README's "## Install"
// heading.
func installSteps(doc string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "\n## Install\n")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "\n```sh\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	return block + "\n", ok
}

// setCheckout replaces the value of the steps' SHMZONE= line with root.
func setCheckout(steps, root string) (string, bool) {
	var out strings.Builder
	found := false
	for line := range strings.Lines(steps) {
		if strings.HasPrefix(line, "SHMZONE=") {
			line = "SHMZONE='" + root + "'\n"
			found = true
		}
		out.WriteString(line)
	}
	return out.String(), found
}
