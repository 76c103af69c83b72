// Package prefork runs an HTTP server as a master process and N child
// processes that each accept on their own SO_REUSEPORT socket of one
// address, so that the kernel spreads connections over the children. With
// the limiters of package limiter over one zone file, every child enforces
// one limit. A child may run any server that serves a net.Listener:
// net/http, fasthttp, fiber.
//
// A program calls Run from main with the same Options in the master and in
// its children: the master re-executes the program's binary (os.Executable,
// with its arguments) once per child, and Run tells the two apart by the
// environment variable EnvChild, which the master sets in each child. In a
// child, Run calls the child function with the child's listener and a
// context that ends on SIGTERM or SIGINT; the function serves and drains
// when the context ends. Serve does it for an http.Server. ServeFunc does it
// for any server, given its serve and shutdown functions. A child ignores
// SIGHUP, the master's signal to roll, which may reach it too (pkill -HUP by
// name, kill -HUP to the process group, a terminal's hang-up): it keeps
// serving and its requests in flight are not dropped.
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
// The master keeps one socket per child slot open for its whole life and
// hands it to each child of the slot (fd 4), so connections queued on a
// socket wait for the slot's next child instead of being reset when a child
// dies or is replaced. A child is ready when it first accepts; it says so to
// the master through a pipe (fd 3). Options.ExtraFiles hands each child more
// files, from ExtraFD on: a pipe carrying a secret, for one, which neither
// the command line nor the environment should show.
//
// A child has started once it is ready. A child fails to start when it
// exits before it is ready, or is killed for not being ready within
// Options.ReadyTimeout. A child that was ready and then died did start.
//
// Before it binds, the master checks that no other socket listens on the
// address: SO_REUSEPORT would let a second master share a running one's
// connections. If one does, Run returns ErrAddrInUse. Options.Takeover
// skips the check, to share the address with an old master during an
// upgrade. The check binds the address without SO_REUSEPORT and closes it.
// A master that binds between that check and this master's own bind is not
// detected. Children inherit their sockets and are never checked.
//
// The master
//
//   - replaces a child that dies: at once if it had served for
//     Options.StableAfter, else after a delay that doubles from
//     Options.BackoffMin to Options.BackoffMax, so that a child that cannot
//     start is not restarted in a tight loop; a replacement that cannot be
//     started at all (fork or exec failing: EAGAIN, EMFILE, ENOMEM) is
//     tried again after the same delay, while the slot's socket keeps its
//     connections for it;
//   - kills a child that is not ready within Options.ReadyTimeout, and
//     replaces it the same way;
//   - gives up when Options.MaxStartFailures children of one slot in a row
//     fail to start: it drains every child, closes its sockets, so that
//     clients are refused, and Run returns ErrStartFailed with the slot, the
//     count, the last child's pid and its exit status;
//   - on SIGTERM or SIGINT, or when Run's context ends, tells every child to
//     drain (SIGTERM), waits for them, killing any still running after
//     Options.DrainTimeout, and returns;
//   - on SIGHUP, rolls the children one slot at a time: it starts the
//     slot's new child and tells the old one to drain only once the new one
//     is ready, so that the address always has a listener, and kills the
//     old one if it is still running Options.DrainTimeout later; a new child
//     that cannot be started, dies or is not ready in time is given up and
//     the slot keeps the old. Such a failure is logged and does not count
//     toward Options.MaxStartFailures: a bad new release leaves the old
//     children serving.
//
// A child gets SIGTERM when the master dies, even by SIGKILL (Linux's
// parent-death signal), and so drains and exits.
//
// Invariants:
//
//	I1. A slot's socket is opened once, by the master, before any child,
//	    and closed only when Run returns: while the master lives, the
//	    address is bound and no queued connection is reset by a child's
//	    exit.
//	I2. A child never outlives its master: it gets SIGTERM when the master
//	    dies, and a child whose master died before it started returns
//	    ErrOrphan at once.
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
// Concurrency: Run is meant to be called once per process, from main; it
// installs signal handlers for SIGTERM, SIGINT and SIGHUP (in the master to
// roll, in a child to ignore it), and removes them when it returns; a child
// catches SIGHUP rather than ignoring it, so that the programs it execs get
// the default disposition. Serve and ServeFunc may be called from any
// goroutine.
// Across processes, the master and the children share nothing but the
// listening sockets, the ready pipes, their stdout and stderr, the files of
// Options.ExtraFiles, and what the program shares itself (a zone file).
//
// The package is for Linux: it relies on SO_REUSEPORT and the parent-death
// signal.
package prefork
