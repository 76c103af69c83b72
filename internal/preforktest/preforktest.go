// Package preforktest runs prefork masters in the helper processes of
// tests: the contrib modules' fleets and Examples.
package preforktest

import (
	"context"
	"fmt"
	"net"

	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/prefork"
)

// Run runs a prefork master on addr with children children, and child in
// each of them. The master writes its reports to stdout, where the parent
// test reads them. It waits up to testutil.Hang for a child to be ready or
// to drain.
func Run(addr string, children int, child func(ctx context.Context, ln net.Listener) error) error {
	o := prefork.Options{
		Addr:         addr,
		Children:     children,
		ReadyTimeout: testutil.Hang,
		DrainTimeout: testutil.Hang,
		Logf:         func(format string, a ...any) { fmt.Printf(format+"\n", a...) },
	}
	return prefork.Run(context.Background(), o, child)
}
