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
// key's hash instead. Scripts run by EVALSHA, and by EVAL on NOSCRIPT,
// through a redis.UniversalClient.
//
// # Differences from lua-resty-redis-ratelimit
//
// Req sends its script the arguments that the Lua module sends, computed
// and formatted as it does. The script's arithmetic is the module's, and
// cjson stores the value the same way. So Go services and OpenResty nodes
// that share a key decide alike, call by call, whoever wrote last. Req
// differs on purpose:
//
//   - A call stamped before the key's stored time leaks nothing, and the
//     stored time stays. The module leaks |now − last|.
//   - A rate below one milli-request per second is refused. The module
//     takes it as 0 and never drains. An infinite rate is refused too.
//   - A dry run writes nothing.
//   - The reply says how long a forbidden key stays so.
//   - An allowed request's value lives until the bucket has drained, if
//     that is longer than 60 s. The module's lives 60 s.
//
// Req uses the caller's clock by default, as the module does. ServerClock
// is exact among Go callers. Take it when no OpenResty node shares the
// keys and the hosts' clocks may disagree. limiter/DESIGN.md, section 10,
// gives the reasons for each difference.
//
// # Live numbers
//
// Req, Count, SlidingWindow and GCRA have setters named as package
// limiter's: SetRate, SetBurst, SetLimit, SetWindow and UnsetLive. A
// setter stores its numbers in Redis, in the hash "prefix|limits|kind",
// with the host and pid that set them and when. kind is "req", "count",
// "sliding" or "gcra". Every host that uses the
// same Redis and prefix reads them. Live numbers win over every
// construction until UnsetLive deletes the hash. Setting reads the numbers
// in force, for tools.
//
// The decision script reads the hash in the same call, with the key's
// state. So each host's next decision uses a change, at no extra round
// trip. On Redis Cluster the hash must then share the key's slot. It does
// when the prefix holds a hash tag, such as "{api}". With a client other
// than *redis.Client, such as a cluster client, and a prefix without one, a limiter reads the hash apart, at most once
// per Options.LiveEvery, and sends its numbers with each script run. A
// change then takes up to LiveEvery to reach a host.
//
// Built numbers stay in each process. Redis holds no construction's
// numbers. During a rolling deploy, each host decides on its own built
// numbers until the deploy completes. Live numbers override them all.
// The setters and the scripts check the numbers as the constructors do.
// A hash with numbers a limiter refuses fails its decisions with
// ErrBadLive, until UnsetLive or a setter replaces them. Tiered has no
// live numbers.
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
// Tiered's decisions never call Redis. The same policies apply while its
// host considers Redis failed. The host judges Redis by its answers to the
// flushes, as Tiered's doc says.
//
// Each script checks its key's state before any arithmetic on it. A state
// that no limiter of its type writes is ErrBadState, and so is a reply
// that is not the script's. Any other error of a script is ErrScript.
// Redis answered, so no failure policy applies to either, and nothing is
// written. The key fails until its value expires or is deleted. Where Go
// and Lua writers share a key, Go errors where Lua resets.
// limiter/DESIGN.md, section 10, lists the states each limiter accepts.
//
// Durations from replies are never negative. They saturate at the longest
// Duration.
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
