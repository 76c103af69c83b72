// Package limiter is rate limiting over a shared dictionary (package dict),
// so that every process of a host that opens the same zone shares one
// limit: what lua-resty-limit-traffic gives OpenResty's workers.
//
//   - Req, a leaky bucket with delay (resty.limit.req, nginx limit_req);
//   - Count, a fixed window (resty.limit.count);
//   - Conn, a concurrency limit (resty.limit.conn), optionally with leases
//     so that a killed process does not leak its slots (NewLeasedConn);
//   - SlidingWindow, two weighted fixed windows, with a documented error
//     bound;
//   - GCRA, in integer nanoseconds, with go-redis/redis_rate's results;
//   - Combine, one request under several limiters (resty.limit.traffic);
//   - ParseRate, nginx's "10r/s" and "30r/m".
//
// Each limiter's key holds one value in the dictionary (state.go).
// Semantics follow the Lua modules (vectors in
// spec/limiters.md), except that every read-modify-write is atomic across
// processes: the Lua req does get-then-set and may overshoot by a request
// per worker. Req differs in one more place: a decision stamped earlier than
// the stored one leaks nothing and keeps the later time, as nginx's
// limit_req does, where resty.limit.req leaks |elapsed|. Processes read
// their clocks before they take the shard's lock, so decisions reach the
// zone slightly out of order, and |elapsed| would leak that jitter as if
// time had passed: four processes at 50 r/s admitted 173 requests in 3 s
// where the bucket allows 155. Package httplimit is net/http middleware
// over any Limiter.
//
// Names. Every constructor takes a name, and a limiter keeps key k's state
// under the zone key "kind|name|k" (names.go): one dictionary serves any
// number of limiters, keyed alike (httplimit's default key, the client's
// address, for all of them), and none reads another's state. Every process
// that builds a limiter of the same kind and name over the same zone shares
// it; two limiters with different names, or of different kinds under one
// name, never meet: a kind's state means nothing to another kind, so a
// shared name gets each its own state rather than ErrAbused (the Lua
// modules, which take the dictionary's keys as given, answer "shdict
// abused" there). The name is the DESIGN contract's one addition to the
// constructors, the second argument of each.
//
// A full zone. A decision that must store a new key in a full shard evicts
// the shard's least used entries (the dictionary's forcible), and tries
// again while the dictionary's eviction rounds leave no room (full.go): it
// fails only for an entry that cannot fit in an empty shard. Stats counts,
// per limiter and process, the operations that evicted (Forcible) and the
// attempts repeated (Retries).
//
// Decision is the DESIGN contract's with one field added: Committed, the
// Lua conn's is_committed, which Combine and the middleware need to know
// whether a Conn must be left.
//
// Invariants:
//
//	I1. A rejection is a Decision with Allowed false and a nil error; errors
//	    are for bad configuration, a foreign value under a key (ErrAbused)
//	    and the dictionary's failures. Hostile input never panics.
//	I2. Every decision that changes a key is one dictionary operation under
//	    the key's shard lock (Incr, IncrInit, Update or Mutate); none reads
//	    a value and writes it back in two steps. Conn's rejection of a
//	    commit is the one exception, as in the Lua module: IncrInit then
//	    Incr(−1), so another process may see the slot taken for that
//	    instant.
//	I3. A decision reads the time once, from the dictionary's clock
//	    (dict.Dict.Now: Options.Clock when injected); Combine reads it once
//	    for all its limiters. Count and a plain Conn read no time: their
//	    windows are the dictionary's TTLs.
//	I4. A rejection and a dry run (commit false) count nothing. Count is the
//	    exception the Lua module makes: a rejected commit stays counted.
//	I5. A limiter never interprets a value of another kind or size than it
//	    writes: it returns ErrAbused and leaves the value untouched, TTL
//	    and flags included.
//	I6. Incoming and Uncommit of Req, Count, plain Conn, SlidingWindow and
//	    GCRA allocate nothing (alloc_test.go), for keys of up to 56 bytes
//	    with a name of up to 64 (the zone key is built on the stack).
//	I7. A limiter reads and writes only zone keys of its own namespace,
//	    "kind|name|"; names hold no '|', so two namespaces share no key.
//	I8. A full zone is never a decision's error: a write evicts and tries
//	    again until it fits; only an entry larger than an empty shard
//	    fails (ErrNoMemory or dict.ErrValueTooLarge).
//
// Concurrency: every limiter is safe for use by many goroutines; its
// configuration is immutable but for Conn's SetMax and SetBurst, which are
// atomic and per process, like Conn's unit delay. Across processes, limiters
// built with the same kind, name and parameters over the same zone share
// each key's state exactly: N processes together admit what one would. Ones
// of the same kind and name with other parameters share it too (as Lua
// workers may), each deciding by its own: a new rate takes over the state.
// A decision waits for a key's shard at most the dictionary's lock timeout
// (dict.Options.LockTimeout, 1 s by default); past it, a process that
// holds the shard stopped or stuck, the decision returns ErrLockTimeout and
// counts nothing, so the caller's failure policy answers in bounded time.
package limiter
