package dict

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// Example 21 of spec_test.go's examples: a zone closed and reopened, in this process
// and in a helper process, reads back the same keys; specDump and the
// helper's body HelperSpecReopen.

// specDump lists a Dict's live keys, sorted, one line each: key, kind, value
// and flags; a list shows its length.
func specDump(d *Dict) (string, error) {
	keys, err := d.Keys(0)
	if err != nil {
		return "", err
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v, f, err := d.Get(k)
		switch {
		case errors.Is(err, ErrIsList):
			n, err := d.LLen(k)
			if err != nil {
				return "", fmt.Errorf("LLen(%q): %w", k, err)
			}
			fmt.Fprintf(&b, "%q list %d\n", k, n)
		case err != nil:
			return "", fmt.Errorf("Get(%q): %w", k, err)
		default:
			fmt.Fprintf(&b, "%q %s %q %d\n", k, v.Kind(), v.String(), f)
		}
	}
	return b.String(), nil
}

func specEx21(t *testing.T) {
	c := new(testutil.Clock)
	path := filepath.Join(t.TempDir(), "zone")
	d, err := Open(path, Options{Size: 1 << 20, Clock: c.UnixMilli})
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	specSet(t, d, "int", Int(42), 0, 7)
	specSet(t, d, "float", Float(2.5), 0, 0)
	specSet(t, d, "bool", Bool(true), 0, 1)
	specSet(t, d, "bytes", String("hello, world"), 0, 0)
	specSet(t, d, "bin\x00\xff", String("\x00\x01"), 0, 0)
	specSet(t, d, "century", Int(100), 100*365*24*time.Hour, 0)
	specSet(t, d, "gone", Int(0), 10*time.Millisecond, 0)
	specSet(t, d, "deleted", Int(0), 0, 0)
	if err := d.Delete("deleted"); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	for _, v := range []Value{Int(1), String("two")} {
		if _, err := d.RPush("list", v); err != nil {
			t.Fatalf("RPush = %v", err)
		}
	}
	c.Advance(20 * time.Millisecond)
	specCheck(t, d)
	if err := d.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	want := strings.Join([]string{
		`"bin\x00\xff" bytes "\x00\x01" 0`,
		`"bool" bool "true" 1`,
		`"bytes" bytes "hello, world" 0`,
		`"century" int "100" 0`,
		`"float" float "2.5" 0`,
		`"int" int "42" 7`,
		`"list" list 2`,
	}, "\n") + "\n"

	// Reopened in this process, with the same clock.
	d, err = Open(path, Options{Clock: c.UnixMilli})
	if err != nil {
		t.Fatalf("reopen = %v", err)
	}
	defer d.Close()
	got, err := specDump(d)
	if err != nil || got != want {
		t.Fatalf("after reopen:\n%s(err %v)\nwant:\n%s", got, err, want)
	}
	specCheck(t, d)

	// Opened by another process, with the system clock: "gone" expired long
	// ago there too.
	out, err := testutil.Helper(t, "spec-reopen", path).CombinedOutput()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	if string(out) != want+"check ok\n" {
		t.Fatalf("helper process read:\n%s\nwant:\n%scheck ok\n", out, want)
	}
	specCheck(t, d)
}

// HelperSpecReopen is the child of specEx21 (registered in multiproc_test.go's
// TestHelperProcess): it opens the zone at args[0], prints what it reads and
// the result of Check.
func HelperSpecReopen(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want a zone path, got %q", args)
	}
	d, err := Open(args[0], Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	out, err := specDump(d)
	if err != nil {
		return err
	}
	fmt.Print(out)
	if err := d.Check(); err != nil {
		return fmt.Errorf("Check: %w", err)
	}
	fmt.Println("check ok")
	return nil
}
