// Package shmfasthttp is rate limiting middleware for fasthttp
// (github.com/valyala/fasthttp) over any limiter.Limiter of shmzone: each
// request is one limiter decision, one atomic operation on a zone shared by
// every process that opens it, so the children of a prefork server
// (github.com/valyala/fasthttp/prefork) admit exactly the limit together,
// not once each. It writes the same headers as package httplimit
// (RateLimit-Policy, RateLimit, X-RateLimit-*, Retry-After) and has the
// same options.
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
