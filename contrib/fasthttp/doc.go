// Package shmfasthttp is rate limiting middleware for fasthttp
// (github.com/valyala/fasthttp) over any limiter.Limiter of shmzone. Each
// request is one limiter decision, one atomic operation on a zone shared by
// every process that opens it. So the children of a prefork server admit
// exactly the limit together, not once each. The middleware writes the
// same headers as package httplimit (RateLimit-Policy, RateLimit,
// X-RateLimit-*, Retry-After) and has the same options.
//
// # Prefork
//
// Package prefork of shmzone runs a fasthttp server as a master process
// and its children. A child serves its listener through prefork.ServeFunc
// with srv.Serve and srv.ShutdownWithContext, as Example_prefork shows.
// The master replaces a child that dies, rolls the children on SIGHUP and
// drains them on SIGTERM. Its children drain and exit when it dies, even by
// SIGKILL.
//
// fasthttp's own prefork, github.com/valyala/fasthttp/prefork, does less.
// Its master
//
//   - starts GOMAXPROCS children, each the program re-executed, which
//     sets its own GOMAXPROCS to one;
//   - hands every child one socket it opened, or, with Reuseport, lets
//     each child open a SO_REUSEPORT socket of its own;
//   - replaces a child that exits, after RecoverInterval;
//   - counts the exits over its whole life, and past RecoverThreshold
//     stops every child and returns ErrOverRecovery;
//   - returns only with an error, and then stops its children with
//     SIGTERM, and SIGKILL after ShutdownGracePeriod.
//
// It does not
//
//   - catch a signal: SIGTERM or SIGINT sent to the master ends it at
//     once, and its children keep serving;
//   - stop its children when it dies, by a signal or a crash. A child set
//     up with OnMasterDeath polls its parent's pid and calls that function
//     when the pid changes. Nothing else tells it;
//   - drain a child: the child has no shutdown, and SIGTERM ends it with
//     its requests in flight;
//   - roll the children, or wait for a child to listen.
//
// A child's own SO_REUSEPORT socket closes when the child exits. The
// connections queued on it are then reset, unless the sysctl
// net.ipv4.tcp_migrate_req is set. Package prefork keeps each socket open
// in its master instead.
//
// Invariant:
//
//	I1. The middleware makes at most one committing decision per request
//	    and undoes it (Uncommit, or Leaving for a Conn) when the request
//	    is given up or ends.
//
// Concurrency: the middleware is safe for concurrent use by goroutines,
// and, through the zone, by processes.
package shmfasthttp
