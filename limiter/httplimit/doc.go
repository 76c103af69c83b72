// Package httplimit is net/http middleware over any limiter.Limiter: with
// the limiters of package limiter over a shared zone, every process of a
// prefork server enforces one limit.
//
//	l, _ := limiter.NewReq(d, "api", 10, 20)
//	mw, _ := httplimit.New(l, httplimit.Options{})
//	http.ListenAndServe(addr, mw(handler))
//
// Middlewares over limiters of different names share one zone safely, with
// the same keys: each limiter counts under its own name (package limiter's
// Names), so a /login limited to 3 per minute stays so beside an /api
// allowed 100.
//
// A request is keyed by its client's address, read from X-Forwarded-For
// only when the peer is a trusted proxy, and then the rightmost untrusted
// address. An IPv6 client is keyed by its /64, or by the /56 or /48 that
// Options.IPv6Prefix names (AddrKeyFunc). An allowed request waits out the limiter's
// delay, as nginx's limit_req does, unless NoDelay; a rejected one gets 429
// with Retry-After, or what Options.Rejected writes. Responses carry the
// RateLimit-Policy and RateLimit headers of
// draft-ietf-httpapi-ratelimit-headers (the -08 and later syntax,
// `"default";q=100;w=60` and `"default";r=42;t=17`) and X-RateLimit-Limit,
// -Remaining and -Reset (delta seconds), written by package headers. A request whose key or decision
// fails goes to Options.Error, 500 by default: that includes a decision that
// timed out on a shard held by a stopped or stuck process
// (limiter.ErrLockTimeout), so the failure policy (fail closed, or fail open
// by calling the next handler from Options.Error) answers it in bounded time.
//
// A key whose state no limiter writes (limiter.ErrBadState, also returned by
// package redistier; limiter.ErrAbused is of that class) goes to
// Options.Error as well, and the default 500 fails it closed. It is not an
// outage but another program writing the limiter's keys, so an Error that
// fails open should do so only for outages (limiter.ErrLockTimeout,
// redistier.ErrUnavailable) and keep failing the rest: letting a bad state
// through would stop limiting that key until someone deletes it.
//
// Invariants:
//
//	I1. Every request that Skip and Exempt let by is decided with commit
//	    true, exactly once; a skipped or exempt one is not decided at all. A
//	    request the limiter counted is given back when it ends early:
//	    Uncommit when its context ends during the delay, and, for a limiter
//	    with Leaving (limiter.Conn), Leaving when the next handler returns
//	    or panics. Refund gives it back when the handler's status says so.
//	I2. X-Forwarded-For is read only from trusted peers, right to left:
//	    a client can prepend any address but never choose the one the
//	    middleware keys by.
//	I3. A rejected request never reaches the next handler and always has
//	    Retry-After, in whole seconds, at least 1. In a dry run it reaches
//	    the handler without Retry-After, and Options.Stats counts it. A
//	    dry run is Options.DryRun, or a limiter's live one (SetDryRun),
//	    which also counts it in the zone.
//	I4. A delay ends with the request's context: a cancelled request waits
//	    no longer, reaches no handler, and gets 503.
//
// Concurrency: the middleware is safe for use by many goroutines; it keeps
// no state of its own beyond its Options, which must not change after New,
// and the header writer of its limiter's last policy, swapped atomically.
// Across processes, it shares what its limiter shares.
package httplimit
