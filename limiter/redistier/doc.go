// Package redistier is the Redis tier of shmzone: the limiters of package
// limiter on Redis, single node or Cluster, for limits that span hosts, and
// Tiered, a global limit whose processes count in the host's zone and
// reach Redis once per host per key per interval.
//
//   - Req, a leaky bucket state-compatible with lua-resty-redis-ratelimit:
//     key "zone:key", the JSON value [excess_m, last_ms, forbidden], rate in
//     milli-requests per second, burst, and a duration for which a rejected
//     key stays forbidden; allowed requests store the value with a 60 s TTL.
//     Go services and OpenResty nodes may share one key space.
//   - Count, a fixed window: INCR and PEXPIRE in one script.
//   - SlidingWindow, limiter.SlidingWindow's two weighted windows in one hash.
//   - GCRA, in integer microseconds on the server's TIME.
//   - Tiered (tiered.go), the local+global tier.
//
// Every limiter implements limiter.Limiter, so limiter.Combine mixes them
// with local ones. Scripts run by EVALSHA, loaded by EVAL on NOSCRIPT
// (go-redis Script.Run), through a redis.UniversalClient.
//
// Failure policy. Each call has a timeout (Options.Timeout, 100 ms by
// default). When Redis does not answer within it, or the connection fails,
// the limiter decides by Options.OnFailure: FailError returns ErrUnavailable;
// FailOpen allows; FailClosed rejects; FailLocal asks Options.Local, a local
// limiter with this host's share of the limit. Every call, failure and
// fallback is counted (Stats). Recovery needs nothing: the next call after
// Redis returns reaches it. A script's own error (a key holding a value of
// another shape) is ErrScript and no policy applies. Tiered's decisions never
// call Redis: the same policies apply while its host considers Redis failed,
// which it judges by Redis's answers to its flushes (two flushes in a row
// failed, over 5 intervals plus the timeout when they timed out), not by how
// late a busy process flushes, until a round trip is answered (see Tiered).
//
// Invariants:
//
//	I1. Each decision is one script run on one key, so one slot: it is
//	    atomic on the server and runs on Redis Cluster unchanged. A key is
//	    "prefix:key".
//	I2. A decision returns within Options.Timeout plus scheduling: the
//	    constructors refuse a *redis.Client or *redis.ClusterClient that
//	    ignores context deadlines (ErrNoContextTimeout).
//	I3. A decision reads the time once: the caller's clock (Options.Now)
//	    passed as an argument, or the server's TIME read inside the script
//	    (ServerClock, the default of SlidingWindow and GCRA).
//	I4. A rejection and a dry run (commit false) write nothing, except that
//	    Count counts a rejected commit and Req's rejection with a duration
//	    marks the key forbidden, as the Lua modules do.
//	I5. Req never writes a value lua-resty-redis-ratelimit 0.03 cannot read,
//	    and reads every value it writes (compat_test.go).
//
// Concurrency: every limiter is safe for use by many goroutines; its
// configuration is immutable and its counters atomic. Across processes and
// hosts, limiters with the same parameters and prefix share each key's state
// exactly through Redis: each decision is atomic on the server. Tiered
// promises less across hosts, a bound stated on its type.
package redistier
