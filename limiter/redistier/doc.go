// Package redistier is the Redis tier of shmzone: the limiters of package
// limiter on Redis, single node or Cluster, for limits that span hosts, and
// Tiered, a global limit whose processes count in the host's zone and
// reach Redis once per host per key per interval.
//
//   - Req, a leaky bucket state-compatible with lua-resty-redis-ratelimit:
//     key "zone:key", the JSON value [excess_m, last_ms, forbidden], rate in
//     milli-requests per second, burst, and a duration for which a rejected
//     key stays forbidden; allowed requests store the value with a 60 s TTL,
//     or longer while the bucket has not drained (below).
//     Go services and OpenResty nodes may share one key space.
//   - Count, a fixed window: INCR and PEXPIRE in one script.
//   - SlidingWindow, limiter.SlidingWindow's two weighted windows in one hash.
//   - GCRA, in integer microseconds on the server's TIME.
//   - Tiered (tiered.go), the local+global tier.
//
// Every limiter implements limiter.Limiter, so limiter.Combine mixes them
// with local ones. IncomingN passes a cost to the script, as in package
// limiter: Req adds n requests to the excess, Count increments by n,
// SlidingWindow counts n, GCRA moves the TAT by n intervals. A cost above
// what a limiter admits is rejected without a round trip. Reset deletes the
// key; it returns ErrUnavailable when Redis does not answer, whatever the
// policy, and under FailLocal resets Options.Local's key too. Tiered's
// Reset writes a reset marker in the key's hash instead, which every host
// learns at its next flush (see Tiered.Reset for what is lost around it).
// Scripts run by EVALSHA, loaded by EVAL on NOSCRIPT (go-redis Script.Run),
// through a redis.UniversalClient.
//
// Req and lua-resty-redis-ratelimit. Req sends its script the arguments the
// Lua module sends, computed and formatted as it does: the rate
// floor(n·1000/per) milli-requests per second, the burst burst·1000, both
// as Lua's tostring writes them (14 significant digits: a burst of 1.9995
// is 1999.5), and now in Unix ms. The script's arithmetic is the module's,
// and cjson stores the value the same way, so Go services and OpenResty
// nodes sharing a key decide alike, call by call, whoever wrote last
// (lua_parity_test.go; bench/peers/luaparity.sh with the module itself).
// The differences, on purpose:
//
//   - A now before the key's stored time leaks nothing, and the stored time
//     stays: the module leaks |now − last|, so calls whose stamps reach
//     Redis out of order drain the bucket once forward and again backward.
//     64 goroutines on one key over the caller's clock admitted 112 where
//     the bucket allows 106 (TestReqCallerClockConcurrent). The trade: a
//     writer whose clock runs ahead holds the key's time ahead, and calls
//     stamped by a clock behind it leak nothing until that clock catches
//     up. Skewed clocks under-admit, by at most what the bucket leaks over
//     the skew; they never over-admit, where with |now − last| every turn
//     between two skewed writers leaks the skew again. An OpenResty node on
//     the key still leaks |now − last| for its own calls.
//   - The caller's clock stays Req's default, although the server's
//     (ServerClock) is exact among Go callers: the module stamps calls with
//     the node's clock, so a key shared with OpenResty nodes needs their
//     time line, and with the rule above the caller's clock no longer
//     over-admits. Take ServerClock when no OpenResty node shares the keys
//     and the hosts' clocks may disagree.
//   - A rate below one milli-request per second ("0.05r/m") is refused: the
//     module takes it as 0 and never drains. So is an infinite rate.
//   - A dry run (commit false) writes nothing, and the reply says how long a
//     forbidden key stays so: the module has neither.
//   - An allowed request's value lives until the next request would find
//     the key as if new, (excess+1000)/rate seconds, when that is longer
//     than the module's 60 s. The module forgets a key 60 s after its last
//     request whatever the bucket holds, so a bucket that takes longer to
//     drain starts full again: at "10r/m" (166 milli-requests a second)
//     with burst 20, a bucket that 21 requests filled drains in 126.5 s,
//     but the module admits 21 again after 60 s, twice the rate. A key an
//     OpenResty node writes still lives 60 s.
//
// Failure policy. Each call has a timeout (Options.Timeout, 100 ms by
// default). When Redis does not answer within it, or the connection fails,
// the limiter decides by Options.OnFailure: FailError returns ErrUnavailable;
// FailOpen allows; FailClosed rejects; FailLocal asks Options.Local, a local
// limiter with this host's share of the limit. Every call, failure and
// fallback is counted (Stats). Recovery needs nothing: the next call after
// Redis returns reaches it. A key holding a state no limiter writes is
// ErrBadState, any other error of a script ErrScript, and no policy applies
// to either (see below). Tiered's decisions never
// call Redis: the same policies apply while its host considers Redis failed,
// which it judges by Redis's answers to its flushes (two flushes in a row
// failed, over 5 intervals plus the timeout when they timed out), not by how
// late a busy process flushes, until a round trip is answered (see Tiered).
//
// State a limiter did not write. Each script checks its key's state before
// any arithmetic on it (state.go), and a state that no limiter of its type
// writes is ErrBadState (limiter.ErrBadState): a key of another type; for
// Req a value that is not the JSON [excess, last, forbidden] with an excess
// of 0 to 1e15+1000 milli-requests (NewReq's largest burst, plus the
// request a forbidding rejection adds), a last time from 0 to a day ahead
// of now, a flag 0 or 1, and a TTL when forbidden; for Count anything but an
// integer as INCR writes it, within ±2^53; for GCRA anything but such an
// integer TAT, from 0 to 100 years (the largest τ) ahead; for SlidingWindow
// a hash of other than exactly i, c and p, a window more than a day ahead,
// or a count negative or above any limit of its window; for Tiered a field
// not named by a host id or "reset", a count that is not an integer within
// ±2^53, counts whose total is beyond it, or a reset marker that is not an
// integer from 1 to 2^53. Tiered's Reset replaces whatever the key holds.
// The bounds are those of every limiter of the type, so that a changed
// configuration still reads the old states. lua-resty-redis-ratelimit reads
// a value that is no array of three as a fresh key, and computes on whatever
// the array holds; this package does neither, so where Go and Lua writers
// share a key, Go errors where Lua resets. A reply that is not the script's is
// ErrBadState too. Redis answered, so it is not an outage: no failure
// policy applies (FailOpen does not admit it), nothing is written, and the
// key fails until its value expires or is deleted. Tiered's flush returns it
// for the key, marks the key in the zone so that its decisions return it
// until a flush reads a good state, and still counts as Redis answering.
// Durations from replies saturate at the longest Duration and are never
// negative: Req's Delay is excess/rate in 128-bit arithmetic, 10,000,001 s
// for an excess of 1e10 milli-requests at 1 r/s, as in Lua.
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
//	I6. Tiered's flush writes a host's count of a key only when the host
//	    knows the key's last reset marker, and only with a sequence number
//	    above the host's last one: a flush run twice counts once.
//
// Concurrency: every limiter is safe for use by many goroutines; its
// configuration is immutable and its counters atomic. Across processes and
// hosts, limiters with the same parameters and prefix share each key's state
// exactly through Redis: each decision is atomic on the server. Tiered
// promises less across hosts, a bound stated on its type.
package redistier
