package limiter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// costProcsCap is the most every kind of costLimiter admits at once.
const costProcsCap = 100

// costLimiter builds the limiter of kind for TestCostAcrossProcesses: each
// admits costProcsCap at one time.
func costLimiter(d *dict.Dict, kind string) (costed, error) {
	switch kind {
	case "req":
		return NewReq(d, "cost", 1, costProcsCap-1)
	case "count":
		return NewCount(d, "cost", costProcsCap, time.Hour)
	case "sliding":
		return NewSlidingWindow(d, "cost", costProcsCap, time.Hour)
	case "gcra":
		return NewGCRA(d, "cost", 1, costProcsCap)
	case "conn":
		return NewConn(d, "cost", 60, costProcsCap-60, 0)
	case "lconn":
		return NewLeasedConn(d, "cost", 60, costProcsCap-60, 0, time.Hour)
	}
	return nil, fmt.Errorf("no kind %q", kind)
}

// TestCostAcrossProcesses: two processes charge costs of 1 to 7, in turn,
// to one key of each kind, on a clock that stands still, so nothing leaks
// or expires. Together they admit exactly what the limiter admits at once,
// never more. Count counts rejected commits too, as for one request: its
// stored allowance is the limit less every cost charged, and together they
// admit at most the limit.
func TestCostAcrossProcesses(t *testing.T) {
	const procs, calls = 2, 7000
	for _, kind := range []string{"req", "count", "sliding", "gcra", "conn", "lconn"} {
		t.Run(kind, func(t *testing.T) {
			path := testutil.TempZone(t)
			d, _ := zonetest.OpenAt(t, path, dict.Options{Size: 4 << 20}) // its clock stands at t0, as the helpers' do
			g := testutil.NewGate(t)
			var admitted, charged atomic.Int64
			ps := make([]*testutil.Proc, procs)
			for i := range ps {
				cmd := testutil.Helper(t, "cost", path, kind, strconv.Itoa(calls))
				g.Attach(cmd)
				ps[i] = testutil.Start(t, cmd, func(line string) {
					f := strings.Fields(line)
					a, _ := strconv.ParseInt(f[0], 10, 64)
					c, _ := strconv.ParseInt(f[1], 10, 64)
					admitted.Add(a)
					charged.Add(c)
				})
			}
			g.Open()
			for _, p := range ps {
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			l, err := costLimiter(d, kind)
			if err != nil {
				t.Fatal(err)
			}
			got := admitted.Load()
			t.Logf("admitted %d of %d charged", got, charged.Load())
			if kind == "count" {
				if got > costProcsCap {
					t.Errorf("%d processes admitted a cost of %d, want at most %d", procs, got, costProcsCap)
				}
				if v, _, err := d.Get(zoneKey(l, "shared")); err != nil || v.Int() != costProcsCap-charged.Load() {
					t.Errorf("stored %v, %v; want %d less the %d charged", v, err, costProcsCap, charged.Load())
				}
			} else if got != costProcsCap {
				t.Errorf("%d processes admitted a cost of %d, want exactly %d", procs, got, costProcsCap)
			}
			if dec, err := l.IncomingN(context.Background(), "shared", 1, false); err != nil || dec.Allowed {
				t.Errorf("a dry run of 1 after = %+v, %v; want a rejection", dec, err)
			}
			if err := d.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// helperCost: path kind calls. Charges costs 1, 2, …, 7, 1, … in calls
// commits on key "shared" at a clock that stands still, and prints the
// cost admitted and the cost charged.
func helperCost(args []string) error {
	d, err := dict.Open(args[0], dict.Options{Clock: func() int64 { return t0 }})
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := costLimiter(d, args[1])
	if err != nil {
		return err
	}
	calls, _ := strconv.Atoi(args[2])
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	var admitted, charged int64
	for i := range calls {
		n := int64(i%7) + 1
		dec, err := l.IncomingN(context.Background(), "shared", n, true)
		if err != nil {
			return err
		}
		charged += n
		if dec.Allowed {
			admitted += n
		}
	}
	fmt.Println(admitted, charged)
	return nil
}
