package limiter

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
)

// t0 is the vectors' origin, in Unix ms: where the tests' clocks
// (testutil.Clock) start.
const t0 = testutil.EpochMilli

// secs converts seconds to a Duration for wanted values.
func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// near reports whether two durations differ by at most a microsecond.
func near(a, b time.Duration) bool { return a-b <= time.Microsecond && b-a <= time.Microsecond }

// nearF reports whether two floats differ by at most 1e-9.
func nearF(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// call is one call of a vector: at ms after t0, on key, a commit ("c"), a
// dry run ("dry") or an Uncommit ("uncommit").
type call struct {
	at  int64
	key string
	op  string
}

// String describes the call for failure messages.
func (c call) String() string {
	if c.op == "uncommit" {
		return fmt.Sprintf("Uncommit(%q) at +%d", c.key, c.at)
	}
	return fmt.Sprintf("Incoming(%q, %s) at +%d", c.key, c.op, c.at)
}

// do sets the clock to c's time and makes c on l: the Decision of an
// Incoming, the zero Decision of an Uncommit. An error fails the test.
func do(t *testing.T, clk *testutil.Clock, l Limiter, c call) Decision {
	t.Helper()
	clk.SetMilli(c.at)
	ctx := context.Background()
	if c.op == "uncommit" {
		if err := l.Uncommit(ctx, c.key); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		return Decision{}
	}
	got, err := l.Incoming(ctx, c.key, c.op == "c")
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	return got
}

// zoneKey returns the dictionary key under which l keeps key's state.
func zoneKey(l Limiter, key string) string {
	switch l := l.(type) {
	case *Req:
		return l.prefix + key
	case *Count:
		return l.prefix + key
	case *Conn:
		return l.prefix + key
	case *SlidingWindow:
		return l.prefix + key
	case *GCRA:
		return l.prefix + key
	}
	panic(fmt.Sprintf("zoneKey of a %T", l))
}
