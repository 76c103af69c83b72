// Package redistier puts the limiters of package limiter on Redis, single
// node or Cluster, for limits that span hosts. It adds Tiered, a global
// limit whose processes count in the host's zone. Tiered reaches Redis once
// per host per key per interval.
//
//   - Req is a leaky bucket, state-compatible with
//     lua-resty-redis-ratelimit. Go services and OpenResty nodes may share
//     one key space.
//   - Count is a fixed window: INCRBY and PEXPIRE in one script.
//   - SlidingWindow is limiter.SlidingWindow's two weighted windows, in one
//     hash.
//   - GCRA works in integer microseconds, on the server's TIME.
//   - Tiered counts in the host's zone, and flushes the counts to Redis.
//
// Every limiter implements limiter.Limiter, so limiter.Combine mixes them
// with local ones. A limiter keeps key k's state under the Redis key
// "prefix:k". IncomingN passes a cost to the script, as in package
// limiter. A cost above what a limiter admits is rejected without a round
// trip. Reset deletes the key. Tiered's Reset writes a reset marker in the
// key's hash instead. Scripts run by EVALSHA through a
// redis.UniversalClient.
//
// # Differences from lua-resty-redis-ratelimit
//
// Req's script arguments and arithmetic are the Lua module's. So both
// decide alike on a shared key. Req differs on purpose in a few
// places. A call stamped in the past leaks nothing. A rate below one
// milli-request per second is refused. A dry run writes nothing. A reply
// says how long a key stays forbidden. A value may live past 60 s.
// limiter/DESIGN.md, section 10, gives each difference and its reason.
//
// # Live numbers
//
// Req, Count, SlidingWindow and GCRA have setters named as package
// limiter's: SetRate, SetBurst, SetLimit, SetWindow and UnsetLive. A
// setter stores its numbers in Redis, in the hash "prefix|limits|kind".
// kind is "req", "count", "sliding" or "gcra". Every host that uses the same Redis and prefix reads them. Live numbers
// win over every construction until UnsetLive deletes the hash. A hash
// with numbers a limiter refuses fails its decisions with ErrBadLive.
// Tiered has no live numbers. limiter/DESIGN.md, section 12, says how a
// change reaches each host.
//
// # Failures
//
// Each call to Redis has a timeout, Options.Timeout. If Redis does not
// answer within it, or the connection fails, Options.OnFailure decides.
// FailError returns ErrUnavailable. FailOpen allows, and FailClosed
// rejects. FailLocal asks Options.Local, a local limiter with this host's
// share of the limit. Stats counts every call, failure and fallback. The
// first call after Redis returns reaches it. Reset returns ErrUnavailable
// whatever the policy, and under FailLocal resets Options.Local's key too.
//
// Tiered's decisions never call Redis. Tiered says when the policies
// apply.
//
// A key state that no limiter of its type writes is ErrBadState, and so
// is a reply that is not the script's. Any other script error is
// ErrScript. Redis answered, so no failure policy applies, and nothing is
// written. The key fails until its value expires or is deleted.
// limiter/DESIGN.md, section 10, lists the states each limiter accepts.
//
// # Invariants
//
//	I1. Each decision is one script run on one key, so one slot, and on
//	    the live hash when it shares that slot. It is atomic on the
//	    server, and runs on Redis Cluster unchanged.
//	I2. A decision returns within Options.Timeout plus scheduling.
//	I3. A decision reads the time once: the caller's clock, or the server's
//	    TIME inside the script.
//	I4. A rejection and a dry run write nothing. Count counts a rejected
//	    commit, and Req's rejection with a duration marks the key forbidden.
//	I5. Req never writes a value that lua-resty-redis-ratelimit 0.03 cannot
//	    read, and reads every value it writes.
//	I6. Tiered's flush writes a host's count only with the key's last reset
//	    marker and a higher sequence number. A flush run twice counts once.
//
// limiter/DESIGN.md, section 10, states each in full.
//
// # Concurrency
//
// Every limiter is safe for use by many goroutines. Its built numbers are
// immutable, and its counters are atomic. Across processes and hosts,
// limiters with the same parameters and prefix share each key's state
// exactly, through Redis. Each decision is atomic on the server. A
// decision that races a setter uses the numbers before or after it,
// never a mix. Tiered
// promises less across hosts, a bound stated on its type.
package redistier
