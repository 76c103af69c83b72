package limiter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestApplyOnceAcrossProcesses: four processes change one Count's numbers
// at once, round after round, while a window is open. First they all build
// it anew with a limit of 10. Then each sets a limit live or drops the
// live one. After each round the window's allowance must be the limit in
// force less the 3 it counted: each change reached it once.
func TestApplyOnceAcrossProcesses(t *testing.T) {
	const children, rounds = 4, 12
	r := rand.New(rand.NewPCG(testutil.Seed(t), 0))
	path := testutil.TempZone(t)
	// The system clock, as the children's: a window of the test clock's
	// would be expired in theirs.
	d, err := dict.Open(path, dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := NewCount(d, "t", 5, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Incoming(context.Background(), "k", true); err != nil {
			t.Fatal(err)
		}
	}
	zk := zoneKey(c, "k")
	kids := make([]*tunedProc, children)
	for i := range kids {
		kids[i] = startTuned(t, path)
	}
	// all sends each child its command before it reads any answer, so
	// that the children run them at once.
	all := func(round int, cmds []string) {
		t.Helper()
		for i, k := range kids {
			if _, err := fmt.Fprintln(k.stdin, cmds[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i, k := range kids {
			if got := recv(t, k.out, k.p); got != "ok" {
				t.Fatalf("round %d: child %d: %q = %q, want ok", round, i, cmds[i], got)
			}
		}
	}
	check := func(round int, cmds []string) {
		t.Helper()
		ss, err := Settings(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 1 {
			t.Fatalf("round %d: Settings() = %+v, want one limiter", round, ss)
		}
		v, _, err := d.Get(zk)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := v.Float(), float64(ss[0].InForce.Limit-3); got != want {
			t.Fatalf("round %d, %q: allowance = %v, want %v: the limit in force %d less 3 counted", round, cmds, got, want, ss[0].InForce.Limit)
		}
	}
	cmds := make([]string, children)
	for i := range cmds {
		cmds[i] = "build 10"
	}
	all(0, cmds)
	check(0, cmds)
	for round := 1; round <= rounds; round++ {
		for i := range cmds {
			cmds[i] = "unset"
			if r.IntN(3) > 0 {
				cmds[i] = fmt.Sprint("set ", 4+r.IntN(60))
			}
		}
		all(round, cmds)
		check(round, cmds)
	}
	for _, k := range kids {
		k.stdin.Close()
		if err := k.p.Wait(); err != nil {
			t.Error(err)
		}
	}
	if err := d.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}
