package main

// serve_master.go: the master of "worker serve", a user of package prefork.
// It keeps -procs children running, one per slot: a child that dies is
// replaced; SIGTERM (or SIGINT) drains every child and exits 0; SIGHUP rolls
// the slots one at a time, starting the new child and waiting until it
// listens before the old one is told to drain, so that the address always
// has a listener. The zone lives in its file, so no state is lost when
// children come and go.

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shmzone/shmzone/prefork"
)

// serveUnreadyEnv, set to "1", makes a child wait for SIGTERM without
// listening or reporting ready: for testing, see -unready-roll.
const serveUnreadyEnv = "WORKER_SERVE_UNREADY"

// A child that dies before it listens, or within serveStableAfter of its
// start, is replaced after a delay that doubles from serveBackoffMin up to
// serveBackoffMax, so that a child that cannot start (a bad zone file, a
// full disk) is retried a few times a second at most rather than in a tight
// loop. A child that served for longer is replaced at once. After
// -max-start-failures children of a slot in a row fail to start, the master
// gives up and exits 1.
const (
	serveStableAfter = time.Second
	serveBackoffMin  = 100 * time.Millisecond
	serveBackoffMax  = 5 * time.Second
)

// serveMaster runs the master until SIGTERM or SIGINT and returns its exit
// code. config is the children's configuration, as JSON.
func serveMaster(c serveConfig, procs int, config string, stdout, stderr io.Writer) int {
	o := prefork.Options{
		Addr:         c.Addr,
		Children:     procs,
		ReadyTimeout: c.ReadyTimeout,
		// A child drains for -drain at most; one that outlives it by far
		// is killed.
		DrainTimeout: c.Drain + 5*time.Second,
		StableAfter:  serveStableAfter,
		BackoffMin:   serveBackoffMin,
		BackoffMax:   serveBackoffMax,
		// Children that keep failing to start: a bad zone, a bad flag.
		MaxStartFailures: c.MaxStartFailures,
		Takeover:         c.Takeover,
		Args:             []string{},
		Env: func(slot, roll int) []string {
			env := []string{childEnv + "=serve", serveConfigEnv + "=" + config}
			if c.UnreadyRoll > 0 && roll == c.UnreadyRoll {
				env = append(env, serveUnreadyEnv+"=1")
			}
			return env
		},
		// The password of Redis, on a pipe per child (serve_secret.go).
		ExtraFiles: func(slot, roll int) ([]*os.File, error) {
			if c.Password == "" {
				return nil, nil
			}
			return serveSecretPipe(c.Password)
		},
		Stdout: stdout,
		Stderr: stderr,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "worker serve: "+format+"\n", args...)
		},
	}
	fmt.Fprintf(stdout, "worker serve: master pid=%d, %d children\n", os.Getpid(), procs)
	if err := prefork.Run(context.Background(), o, nil); err != nil {
		fmt.Fprintln(stderr, "worker serve:", err)
		return 1
	}
	return 0
}
