// Package prefork runs an HTTP server as a master process and N child
// processes. Each child accepts on its own SO_REUSEPORT socket of one
// address, so the kernel spreads connections over the children. With the
// limiters of package limiter over one zone file, every child enforces one
// limit. A child may run any server that serves a net.Listener: net/http,
// fasthttp, fiber.
//
// A program calls Run from main with the same Options in the master and in
// its children. The master re-executes the program's binary once per
// child. Run tells the two apart by the environment variable EnvChild. In
// a child, Run calls the child function with the child's listener and a
// context that ends on SIGTERM or SIGINT. The function serves, and drains
// when the context ends. Serve does it for an http.Server. ServeFunc does
// it for any server, given its serve and shutdown functions. A child
// ignores SIGHUP, the master's signal to roll.
//
//	err := prefork.Run(ctx, prefork.Options{Addr: ":8080", Children: 4},
//		func(ctx context.Context, ln net.Listener) error {
//			srv := &http.Server{Handler: h}
//			return prefork.Serve(ctx, srv, ln, 10*time.Second)
//		})
//
// A fasthttp child serves ln the same way:
//
//	srv := &fasthttp.Server{Handler: h}
//	return prefork.ServeFunc(ctx, ln, srv.Serve, srv.ShutdownWithContext, 10*time.Second)
//
// The master keeps one socket per child slot open for its whole life. It
// hands the socket to each child of the slot, at fd 4. A child is ready
// when it first accepts, and says so through a pipe at fd 3.
// Options.ExtraFiles hands each child more files, from ExtraFD on.
//
// A child fails to start when it exits, or is killed, before it is ready.
//
// Before it binds, the master checks that no other socket listens on the
// address. If one does, Run returns ErrAddrInUse. Options.Takeover skips
// the check, to share the address with an old master during an upgrade.
//
// The master
//
//   - replaces a child that dies, at once if it had served for
//     Options.StableAfter, else after a delay that doubles from
//     Options.BackoffMin to Options.BackoffMax;
//   - kills a child that is not ready within Options.ReadyTimeout, and
//     replaces it the same way;
//   - gives up when Options.MaxStartFailures children of one slot in a row
//     fail to start, and Run returns ErrStartFailed;
//   - on SIGTERM or SIGINT, or when Run's context ends, drains every child
//     and returns;
//   - on SIGHUP, rolls the children one slot at a time. The old child
//     drains only once the new one is ready. A new child that fails is
//     given up, and the slot keeps the old one.
//
// A child drains and exits when the master dies, even by SIGKILL.
// DESIGN.md gives the reasons for these rules.
//
// Invariants:
//
//	I1. A slot's socket is opened once, by the master, before any child.
//	    It is closed only when Run returns.
//	I2. A child never outlives its master. A child whose master died
//	    before it started returns ErrOrphan at once.
//	I3. In a roll, a slot's old child is told to drain only after its new
//	    child is ready.
//	I4. A child that dies is replaced, unless it was told to drain or I6
//	    ends Run. A slot whose replacement cannot be forked or executed is
//	    tried again until one starts. Two quick deaths or failed starts in
//	    a row of a slot are BackoffMin apart at least.
//	I5. A child told to drain, by a roll or at the master's end, is killed
//	    if it still runs DrainTimeout after it was last told.
//	I6. Outside a roll, when MaxStartFailures children of a slot in a row
//	    fail to start, Run stops every child, closes every socket and
//	    returns ErrStartFailed.
//	I7. The master binds no address that another socket listens on,
//	    unless Options.Takeover is set.
//
// Concurrency: Run is meant to be called once per process, from main. It
// installs signal handlers, and removes them when it returns. Serve and ServeFunc may be called from any
// goroutine. Across processes, the master and the children share nothing
// but the listening sockets, the ready pipes, their stdout and stderr, the
// files of Options.ExtraFiles, and what the program shares itself, such as
// a zone file.
//
// The package is for Linux: it relies on SO_REUSEPORT and the parent-death
// signal.
package prefork
