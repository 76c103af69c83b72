// Package shmfiber connects fiber v3 (github.com/gofiber/fiber/v3) to a
// shmzone dictionary, so that the children of a prefork app share their rate
// limits and their stored state.
//
// New is rate limiting middleware over any limiter.Limiter: each request is
// one limiter decision, one atomic operation on the shared zone, so N
// prefork children over one zone admit exactly the limit, not N times it. It
// writes the same headers as package httplimit (RateLimit-Policy,
// RateLimit, X-RateLimit-*, Retry-After) and has the same options.
//
// Storage is a fiber.Storage over a dict.Dict, for fiber's session, cache,
// CSRF and idempotency middlewares: every child sees one state.
//
// Do not rate limit with fiber's own limiter middleware over a Storage,
// this one or any other: it reads a client's count, then writes it back
// (get-then-set), so concurrent requests in different children (or
// goroutines) both read the same count and both pass; the limit leaks by
// the number of such races. Its memory storage is worse under prefork: each
// child has its own, so N children admit N times the limit. Use New.
//
// # Prefork
//
// Package prefork of shmzone runs a fiber app as a master process and its
// children. A child serves its listener through prefork.ServeFunc with a
// call of app.Listener and app.ShutdownWithContext, as Example_prefork
// shows. The master replaces a child that dies, rolls the children on
// SIGHUP and drains them on SIGTERM. Its children drain and exit when it
// dies, even by SIGKILL.
//
// fiber's own prefork, ListenConfig.EnablePrefork, replaces no child: its
// master returns once any child exits, and kills the others. It catches no
// signal and drains no child. A child exits at once, with its requests in
// flight, when polling finds that its parent's pid is 1. A child whose
// master dies under a subreaper gets another parent and serves on.
//
// Invariants:
//
//	I1. A Storage reads and writes only keys under its prefix; Reset
//	    deletes only those.
//	I2. The middleware makes at most one committing decision per request
//	    and undoes it (Uncommit, or Leaving for a Conn) when the request
//	    is given up or ends.
//
// Concurrency: a Storage and the middleware are safe for concurrent use by
// goroutines, and, through the zone, by processes.
package shmfiber
