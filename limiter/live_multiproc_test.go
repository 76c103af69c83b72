package limiter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// tunedProc is a helper process that runs helperTuned.
type tunedProc struct {
	p     *testutil.Proc
	stdin io.WriteCloser
	out   chan string
}

func startTuned(t *testing.T, path string) *tunedProc {
	t.Helper()
	cmd := testutil.Helper(t, "tuned", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, onLine := lines()
	return &tunedProc{testutil.Start(t, cmd, onLine), stdin, out}
}

// do sends a command and returns the helper's answer.
func (tp *tunedProc) do(t *testing.T, cmd string) string {
	t.Helper()
	if _, err := fmt.Fprintln(tp.stdin, cmd); err != nil {
		t.Fatal(err)
	}
	return recv(t, tp.out, tp.p)
}

// TestLiveAcrossProcesses: two processes build one Count with different
// limits, and both decide by the newest construction's. A limit one sets
// live applies in the other at once, wins over a third process's new
// construction, and once unset gives way to that construction's limit.
func TestLiveAcrossProcesses(t *testing.T) {
	path := testutil.TempZone(t)
	d, _ := zonetest.OpenAt(t, path, dict.Options{})
	a, b := startTuned(t, path), startTuned(t, path)
	expect := func(tp *tunedProc, name, cmd, want string) {
		t.Helper()
		if got := tp.do(t, cmd); got != want {
			t.Fatalf("%s %q = %q, want %q", name, cmd, got, want)
		}
	}
	expect(a, "A", "build 2", "ok")
	expect(a, "A", "policy", "2")
	expect(b, "B", "build 5", "ok")
	expect(b, "B", "policy", "5")
	expect(a, "A", "policy", "5") // the newest construction's
	for i := range 5 {
		expect(a, "A", "commit", fmt.Sprintf("true %d", 4-i))
	}
	expect(b, "B", "commit", "false 0")

	expect(a, "A", "set 100", "ok")
	expect(b, "B", "policy", "100")
	expect(b, "B", "commit", "true 93") // applies to the open window: 100 less 7 counted

	c := startTuned(t, path)
	expect(c, "C", "build 7", "ok")
	expect(c, "C", "policy", "100") // live numbers win over a construction
	expect(a, "A", "policy", "100")

	expect(b, "B", "unset", "ok")
	for _, tp := range []struct {
		name string
		p    *tunedProc
	}{{"A", a}, {"B", b}, {"C", c}} {
		expect(tp.p, tp.name, "policy", "7")
	}
	expect(c, "C", "commit", "false 0") // 8 counted of 7

	ss, err := Settings(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].BuiltPid != c.p.Pid() || ss[0].InForce.Limit != 7 || ss[0].LiveFields != 0 {
		t.Errorf("Settings() = %+v, want count t built by C (pid %d) with limit 7, nothing live", ss, c.p.Pid())
	}
	for _, tp := range []*tunedProc{a, b, c} {
		tp.stdin.Close()
		if err := tp.p.Wait(); err != nil {
			t.Error(err)
		}
	}
}

// helperTuned: path. Runs commands from stdin on a Count named "t" over
// path, one answer a line: "build N" builds it with limit N per hour;
// "policy" prints its Policy's limit; "commit" makes a committed request
// of key "k" and prints whether it was allowed and what remains; "set N"
// sets its limit live; "unset" drops the live limit.
func helperTuned(args []string) error {
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	var l *Count
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.ParseInt(arg, 10, 64)
		switch verb {
		case "build":
			l, err = NewCount(d, "t", n, time.Hour)
		case "set":
			err = l.SetLimit(n)
		case "unset":
			err = l.UnsetLive()
		case "policy":
			fmt.Println(l.Policy().Limit)
			continue
		case "commit":
			var dec Decision
			dec, err = l.Incoming(context.Background(), "k", true)
			if err == nil {
				fmt.Println(dec.Allowed, dec.Remaining)
				continue
			}
		default:
			err = fmt.Errorf("no command %q", verb)
		}
		if err != nil {
			return err
		}
		fmt.Println("ok")
	}
	return sc.Err()
}

// TestLiveRollingDeploy: four children of one Count are replaced one at a
// time, as a rolling deploy replaces them. A limit set live holds through
// a deploy of other numbers; once unset, every child, old or new, decides
// by the newest construction's numbers.
func TestLiveRollingDeploy(t *testing.T) {
	const children = 4
	path := testutil.TempZone(t)
	d, _ := zonetest.OpenAt(t, path, dict.Options{})
	kids := make([]*tunedProc, children)
	start := func(i int, limit int64) {
		t.Helper()
		kids[i] = startTuned(t, path)
		if got := kids[i].do(t, fmt.Sprint("build ", limit)); got != "ok" {
			t.Fatalf("child %d: build %d = %q", i, limit, got)
		}
	}
	stop := func(i int) {
		t.Helper()
		kids[i].stdin.Close()
		if err := kids[i].p.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	all := func(when string, want string) {
		t.Helper()
		for i, k := range kids {
			if got := k.do(t, "policy"); got != want {
				t.Fatalf("%s: child %d's limit = %s, want %s", when, i, got, want)
			}
		}
	}
	for i := range kids {
		start(i, 10)
	}
	all("first deploy", "10")
	if err := SetLive(d, kindCount, "t", Numbers{Limit: 50}, FieldLimit); err != nil {
		t.Fatal(err)
	}
	all("after limits set", "50")
	for i := range kids {
		stop(i)
		start(i, 20)
		all(fmt.Sprintf("second deploy, %d children replaced", i+1), "50")
	}
	if ok, err := UnsetLive(d, kindCount, "t"); !ok || err != nil {
		t.Fatalf("UnsetLive = %v, %v", ok, err)
	}
	all("after limits unset", "20")
	stop(0)
	start(0, 30)
	all("third deploy, one child replaced", "30")
	for i := range kids {
		stop(i)
	}
}

// TestLiveBuiltRecordEvicted: when the meta record of the newest
// construction is evicted, each process keeps deciding by the numbers it
// last read, a change of another limiter's numbers included. It does not
// go back to its own construction's: processes built with other numbers
// would then decide by different ones.
func TestLiveBuiltRecordEvicted(t *testing.T) {
	path := testutil.TempZone(t)
	d, _ := zonetest.OpenAt(t, path, dict.Options{})
	a, b := startTuned(t, path), startTuned(t, path)
	expect := func(tp *tunedProc, name, cmd, want string) {
		t.Helper()
		if got := tp.do(t, cmd); got != want {
			t.Fatalf("%s %q = %q, want %q", name, cmd, got, want)
		}
	}
	expect(a, "A", "build 2", "ok")
	expect(b, "B", "build 5", "ok")
	expect(a, "A", "policy", "5")
	// An eviction of the meta record, then a change that makes every
	// limiter of the zone read its numbers again.
	if err := d.Delete(metaKind + "|count|t"); err != nil {
		t.Fatal(err)
	}
	other, err := NewCount(d, "other", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetLimit(3); err != nil {
		t.Fatal(err)
	}
	expect(a, "A", "policy", "5")
	expect(b, "B", "policy", "5")
	// Live numbers still win, and once unset the numbers last read apply.
	expect(a, "A", "set 9", "ok")
	expect(b, "B", "policy", "9")
	expect(b, "B", "unset", "ok")
	expect(a, "A", "policy", "5")
	expect(b, "B", "policy", "5")
	for _, tp := range []*tunedProc{a, b} {
		tp.stdin.Close()
		if err := tp.p.Wait(); err != nil {
			t.Error(err)
		}
	}
}
