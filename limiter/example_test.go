package limiter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// openZone opens a fresh zone whose clock stands still at now (Unix ms), so
// that the examples' output does not depend on the time.
func openZone(now *int64) (*dict.Dict, func()) {
	dir, err := os.MkdirTemp("", "limiter-example")
	if err != nil {
		panic(err)
	}
	d, err := dict.Open(filepath.Join(dir, "ex.zone"), dict.Options{Size: 1 << 20, Clock: func() int64 { return *now }})
	if err != nil {
		panic(err)
	}
	return d, func() { d.Close(); os.RemoveAll(dir) }
}

func ExampleReq() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	// nginx's limit_req zone=... rate=2r/s burst=2: every process that
	// opens the zone shares the bucket of each key.
	rate, _ := limiter.ParseRate("2r/s")
	l, _ := limiter.NewReq(d, "per-client", rate, 2)
	ctx := context.Background()
	for i := range 4 {
		dec, _ := l.Incoming(ctx, "192.0.2.1", true)
		fmt.Printf("request %d: allowed %v, wait %v\n", i+1, dec.Allowed, dec.Delay)
	}
	now += 1000 // a second later, two requests have leaked out
	dec, _ := l.Incoming(ctx, "192.0.2.1", true)
	fmt.Printf("a second later: allowed %v, wait %v\n", dec.Allowed, dec.Delay)
	// Output:
	// request 1: allowed true, wait 0s
	// request 2: allowed true, wait 500ms
	// request 3: allowed true, wait 1s
	// request 4: allowed false, wait 0s
	// a second later: allowed true, wait 500ms
}

func ExampleCount() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	l, _ := limiter.NewCount(d, "per-user", 2, time.Minute)
	ctx := context.Background()
	for range 3 {
		dec, _ := l.Incoming(ctx, "42", true)
		fmt.Printf("allowed %v, remaining %d, retry after %v\n", dec.Allowed, dec.Remaining, dec.RetryAfter)
	}
	// Output:
	// allowed true, remaining 1, retry after 0s
	// allowed true, remaining 0, retry after 0s
	// allowed false, remaining 0, retry after 1m0s
}

func ExampleConn() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	// 1 request at once, 1 more waits; leases of 30 s so that a killed
	// process's slots come back.
	l, _ := limiter.NewLeasedConn(d, "backends", 1, 1, 200*time.Millisecond, 30*time.Second)
	ctx := context.Background()
	a, _ := l.Incoming(ctx, "backend", true)
	b, _ := l.Incoming(ctx, "backend", true)
	c, _ := l.Incoming(ctx, "backend", true)
	fmt.Println(a.Allowed, a.Delay, b.Allowed, b.Delay, c.Allowed)
	n, _ := l.Leaving(ctx, "backend", 100*time.Millisecond)
	fmt.Println("in flight:", n, "unit delay:", l.UnitDelay())
	// Output:
	// true 0s true 200ms false
	// in flight: 1 unit delay: 150ms
}

func ExampleGCRA() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	l, _ := limiter.NewGCRA(d, "api", 10, 10) // 10 per second, bursts of 10
	ctx := context.Background()
	dec, _ := l.IncomingN(ctx, "api:key", 1, true)
	fmt.Println(dec.Allowed, dec.Remaining, dec.ResetAfter)
	dec, _ = l.IncomingN(ctx, "api:key", 10, true)
	fmt.Println(dec.Allowed, dec.RetryAfter)
	// Output:
	// true 9 100ms
	// false 100ms
}

func ExampleCombine() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	perIP, _ := limiter.NewReq(d, "per-ip", 1, 1)
	perUser, _ := limiter.NewCount(d, "per-user", 100, time.Hour)
	ctx := context.Background()
	ls := []limiter.Limiter{perIP, perUser}
	keys := []string{"192.0.2.1", "42"}
	for range 3 {
		dec, _ := limiter.Combine(ctx, ls, keys)
		fmt.Println(dec.Allowed, dec.Delay, dec.Remaining)
	}
	// Output:
	// true 0s 1
	// true 1s 0
	// false 0s 0
}

// Two limits on the same client key in one zone: each limiter counts under
// its own name, so /api's budget does not lift /login's. Each records its
// parameters under "meta|kind|name", for shmctl limits.
func Example_names() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	login, _ := limiter.NewCount(d, "login", 3, time.Minute)
	api, _ := limiter.NewCount(d, "api", 100, time.Minute)
	ctx := context.Background()
	for range 5 {
		api.Incoming(ctx, "192.0.2.1", true)
	}
	var allowed []bool
	for range 4 {
		dec, _ := login.Incoming(ctx, "192.0.2.1", true)
		allowed = append(allowed, dec.Allowed)
	}
	keys, _ := d.Keys(0)
	slices.Sort(keys)
	fmt.Println(allowed)
	fmt.Println(keys)
	// Output:
	// [true true true false]
	// [count|api|192.0.2.1 count|login|192.0.2.1 meta|count|api meta|count|login]
}

// An operator raises a Count's limit live, as shmctl limits set does. The
// change applies to the window already open, whose rejected request
// stayed counted, as in the Lua module. It wins over the numbers the
// limiter was built with until it is unset.
func ExampleCount_SetLimit() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	l, _ := limiter.NewCount(d, "login", 2, time.Minute)
	ctx := context.Background()
	try := func() {
		dec, _ := l.Incoming(ctx, "alice", true)
		fmt.Printf("limit %d: allowed %v, %d left\n", l.Policy().Limit, dec.Allowed, dec.Remaining)
	}
	try()
	try()
	try()
	l.SetLimit(10)
	try()
	l.UnsetLive()
	try()
	// Output:
	// limit 2: allowed true, 1 left
	// limit 2: allowed true, 0 left
	// limit 2: allowed false, 0 left
	// limit 10: allowed true, 6 left
	// limit 2: allowed false, 0 left
}

// A dry run switched on live, as shmctl limits set --dry-run on does. The
// limiter decides as before. A middleware over it lets the rejected
// request through, and counts it in the zone with AddDryRunRejected.
func ExampleCount_SetDryRun() {
	now := int64(1_700_000_000_000)
	d, done := openZone(&now)
	defer done()
	l, _ := limiter.NewCount(d, "login", 1, time.Minute)
	ctx := context.Background()
	l.SetDryRun(true)
	for range 3 {
		dec, _ := l.Incoming(ctx, "alice", true)
		if !dec.Allowed && l.DryRun() {
			l.AddDryRunRejected(1) // what admit.Gate does
		}
		fmt.Printf("allowed %v, dry run %v\n", dec.Allowed, l.DryRun())
	}
	n, _ := l.DryRunRejected()
	fmt.Println("dry-run rejections in the zone:", n)
	// Output:
	// allowed true, dry run true
	// allowed false, dry run true
	// allowed false, dry run true
	// dry-run rejections in the zone: 2
}
