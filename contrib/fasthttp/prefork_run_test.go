package shmfasthttp_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/shmzone/shmzone/internal/preforktest"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/prefork"
	"github.com/valyala/fasthttp"
)

// The tests of this file run fasthttp servers under package prefork: the
// master is a helper process, and each child a process it re-executes.

func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"example": helperExample,
		"slow":    helperSlow,
	})
}

// helperExample runs Example_prefork's child on args[0], over the zone
// args[1], with testutil.PreforkProcs children.
func helperExample(args []string) error {
	return preforktest.Run(args[0], testutil.PreforkProcs, func(ctx context.Context, ln net.Listener) error {
		return child(ctx, ln, args[1])
	})
}

// helperSlow runs 2 children on args[0]. A child answers /slow once it has
// been told to drain, having written "in flight pid=N" to stdout when the
// request came in.
func helperSlow(args []string) error {
	return preforktest.Run(args[0], 2, func(ctx context.Context, ln net.Listener) error {
		pid := os.Getpid()
		srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
			fmt.Printf("in flight pid=%d\n", pid)
			<-ctx.Done()
			fmt.Fprintf(c, "drained pid=%d", pid)
		}}
		return prefork.ServeFunc(ctx, ln, srv.Serve, srv.ShutdownWithContext, testutil.Hang)
	})
}

// startExample starts the master of Example_prefork over a new zone and
// returns it, with its address, once its children are ready.
func startExample(t *testing.T) (*testutil.Master, string) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	zone := filepath.Join(t.TempDir(), "app.zone")
	return testutil.StartMaster(t, testutil.PreforkProcs, "example", addr, zone), addr
}

// Example_prefork's server, with 4 children, admits exactly the limit of a
// client across all of them, and every child serves.
func TestRunExampleLimitsAcrossChildren(t *testing.T) {
	m, addr := startExample(t)
	testutil.CheckRunLimit(t, m, addr, 100)
}

// SIGHUP replaces every child of Example_prefork's server, and only the
// new children serve then. A child killed is replaced too.
func TestRunExampleRollsAndReplaces(t *testing.T) {
	m, addr := startExample(t)
	testutil.CheckRunRollAndReplace(t, m, addr)
}

// SIGKILL to the master of Example_prefork's server stops every child.
func TestRunExampleChildrenExitWithMaster(t *testing.T) {
	m, addr := startExample(t)
	testutil.CheckRunMasterKilled(t, m, addr)
}

// A request in flight is answered in full when its child drains: at
// SIGHUP, by the old child, and at SIGTERM, after which the master exits 0.
func TestRunDrainsRequestInFlight(t *testing.T) {
	addr := testutil.FreeAddr(t)
	m := testutil.StartMaster(t, 2, "slow", addr)
	testutil.CheckRunDrain(t, m, addr)
}
