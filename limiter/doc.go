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
//   - ParseRate, the rate strings of nginx and lua-resty-redis-ratelimit
//     ("10r/s", "30r/m", "0.5r/s").
//
// Costs. A request may cost more than one. IncomingN charges a cost n, and
// Incoming is IncomingN of 1, as x/time/rate's Allow is AllowN of 1. A cost
// is n requests at one time, all admitted or none:
//
//   - Req adds n requests to its bucket's excess;
//   - Count takes n from its window's allowance;
//   - SlidingWindow counts n;
//   - GCRA moves its TAT by n emission intervals;
//   - Conn takes n slots, which LeavingN gives back;
//   - CombineN charges n to each of its limiters.
//
// A cost above the most a limiter admits at once is always rejected: above
// burst+1 for Req, limit for Count and SlidingWindow, max+burst for Conn.
// Such a rejection reads and writes nothing, and its RetryAfter is the
// longest Duration. GCRA rejects a cost above its burst as redis_rate does.
// A cost below 1 is ErrBadCost. UncommitN gives a cost back; a cost the
// limiter never admits is ErrBadCost there too. Conn's bound there is 2^53,
// since SetMax may lower max+burst while requests are in flight.
//
// Reset. Reset deletes a key's state, so that its next request finds it as
// if never seen. It deletes a state no limiter writes too. A leased Conn's
// Reset frees the slots of every holder, whose LeavingN then returns
// ErrNotFound.
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
// State a limiter did not write. A key may hold a value of another kind or
// size than its limiter writes (ErrAbused). It may also hold a value of the
// right kind and size whose contents no limiter of its type writes:
//
//   - Count, Conn: an int or a float beyond ±2^53, NaN or an infinity. A
//     fraction is a count: a Lua writer or IncrFloat may leave one.
//   - leased Conn: a record of no slots or of more than 2^53, or one that
//     expires more than the longest lease, a day, and the skew ahead.
//   - Req: an excess above the largest burst's, 1e15 milli-requests, or a
//     time before the epoch or more than the skew ahead.
//   - GCRA: a negative TAT, or one more than the largest τ, 100 years, and
//     the skew ahead.
//   - SlidingWindow: a negative count, one above any limit of its window,
//     or a window that starts before the epoch or more than the skew ahead.
//
// The skew is a day. It is how far ahead of a decision's clock a stored
// time may be. Processes of a host read one wall clock, and their coarse
// clocks lag it by milliseconds. A stored time is ahead when the wall clock
// was stepped back: by NTP, an operator, a restored virtual machine. A day
// covers the steps of a host that keeps time. A tighter bound would turn
// such a step into errors on every live key until it expires.
//
// The bounds are those of every limiter of the type, not of one
// configuration. So limiters whose parameters changed still read each
// other's states. Such a state is ErrBadState, and errors.Is holds for
// ErrAbused too. The limiter decides nothing, writes nothing and leaves the
// value as it is. The key fails until its value expires or Reset deletes
// it. It is not an outage. Package httplimit hands it to
// Options.Error like any error, and a policy that fails open on outages
// should not let it through.
//
// The checks are a few compares on the decoded state, inlined in each
// decision. Count and Conn keep their single IncrInit, which adds to the
// number before they see it. NaN, the infinities and floats beyond 2^54
// absorb the ±1 unchanged, and one between 2^53 and 2^54 may move by 2. An
// int beyond 2^53 is moved back by as much. The value is read back only
// when IncrInit's result is outside (0, 2^53]. Req's and GCRA's durations
// saturate at the longest Duration and are never negative: an excess of
// 1e10 milli-requests at 1 r/s waits 10,000,001 s, as in Lua.
//
// Arithmetic. Req, Count and Conn compute as lua-resty-limit-traffic 0.09
// does, in its units and its order of operations, so that a key's state is,
// bit for bit, what the Lua module stores after the same calls, or, for a
// Req that has drained, gone (below) (lua_parity_test.go replays random sequences against a Go rendering of its
// arithmetic; bench/peers/luaparity.sh against the module itself in nginx).
// Req works in milli-requests, excess − rate·|elapsed|/1000 + 1000, on
// ngx.now()·1000, which near the epoch is not a whole number of ms (1001 ms
// reads 1000.9999999999999, and the record keeps it truncated); its delay is
// excess/rate seconds. Count and Conn decide on the stored number as a
// float, so the fraction a Lua writer or IncrFloat left stays (2.5 less 1 is
// 1.5). ParseRate reads every rate string lua-resty-redis-ratelimit reads.
// Where the package differs from the Lua modules, it does so on purpose:
//
//   - Req: a decision stamped earlier than the stored one leaks nothing and
//     the stored time never goes back (above): |elapsed| over-admits when
//     processes' decisions reach the zone out of order.
//   - Req: the state expires when it has drained, the moment it means no
//     more than no state, so that a full zone reclaims it before live
//     state; the Lua module keeps it. Decisions are the same; Uncommit
//     of a drained key finds nothing (ErrNotFound) where the Lua
//     module's finds the drained record and leaves it drained; Combine,
//     whose pass 2 may uncommit such a key, takes it as done.
//   - Every read-modify-write is atomic across processes (above), where the
//     Lua req's get-then-set may overshoot by a request per worker.
//   - ParseRate refuses an infinite rate ("infr/s", "1e400r/s"), which the
//     Lua module takes and then computes with.
//   - Conn.Leaving returns the count truncated (the stored number keeps its
//     fraction), and the unit delay is kept in whole nanoseconds.
//   - A Decision says more than the Lua modules return: RetryAfter,
//     ResetAfter, Remaining, and the state of a rejected request.
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
// constructors, the second argument of each. In one process, the
// constructors refuse a limiter of a kind and name that a live limiter
// holds over the same zone with other parameters (ErrNameClash): a copy
// that kept the name would count against the other's limit. The same
// parameters are allowed, so a process may build a limiter twice. A
// limiter the process no longer references holds its name no more. To
// change a limiter's parameters in a running process, drop the old one
// first, or give the new one another name.
//
// Each constructor also records its parameters in the zone, under
// "meta|kind|name" (inspect.go). Clients reads them to tell how near each
// client of each limiter is to its limit, for shmctl limits.
//
// A full zone. A decision that must store a new key in a full shard evicts
// the shard's least used entries (the dictionary's forcible), and tries
// again while the dictionary's eviction rounds leave no room (full.go): it
// fails only for an entry that cannot fit in an empty shard. Stats counts,
// per limiter and process, the operations that evicted (Forcible) and the
// attempts repeated (Retries).
//
// A zone under a key flood. A flood of one-request keys (an attacker's
// addresses) fills the zone; what it evicts decides whether held clients
// stay held. The dictionary evicts in two segments: new entries wait in
// probation, entries used again are promoted to a protected segment of at
// most seven eighths of the entries, and eviction takes probation first.
// Each limiter's state expires the moment it stops carrying information,
// when it means no more than no state: Req's when its excess has drained,
// Count's at its window's end, GCRA's at its theoretical arrival time,
// SlidingWindow's when both of its windows have ended. Expired entries
// nobody uses are reclaimed first; the expired entry of a key in use is
// kept as the slot of its next state, so that a client whose state ends
// as it comes back stays protected (package dict). A key evicted while
// live leaves a trace in the zone, which every process shares; its next
// request finds the trace, and its new state joins the protected segment.
// So a client whose first request came during the flood is held from its
// third request on, if the zone remembers the new keys that arrive between
// its first two (package dict's DESIGN.md). Stats.Evicted counts the
// decisions (and Uncommits, Leavings, Renewals) whose key's state had been
// evicted while live: a client who was being limited and may have been
// admitted again. It is the dictionary's Outcome.Lost (and
// dict.Stats.Lost, zone-wide). It misses a loss when more keys were
// evicted since than the zone keeps traces of, and otherwise errs toward
// not counting.
// How big a zone must be for N held clients is measured by TestZoneSizing
// (sizing_test.go; table in the README): a zone keeps held clients up to
// seven eighths of the states it holds, whatever the flood, for every
// kind. TestFloodNewClients holds clients whose first request comes during
// the flood.
//
// Decision is the DESIGN contract's with one field added: Committed, the
// Lua conn's is_committed, which Combine and the middleware need to know
// whether a Conn must be left.
//
// Invariants:
//
//	I1. A rejection is a Decision with Allowed false and a nil error; errors
//	    are for bad configuration, a state the limiter cannot have written
//	    (ErrBadState, ErrAbused) and the dictionary's failures. Hostile input
//	    never panics.
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
//	    and flags included. Nor does it do arithmetic on contents it cannot
//	    have written: it returns ErrBadState (below).
//	I6. Incoming, IncomingN, Uncommit, UncommitN and Reset of Req, Count,
//	    plain Conn, SlidingWindow and GCRA allocate nothing (alloc_test.go),
//	    for keys of up to 56 bytes with a name of up to 64 (the zone key is
//	    built on the stack).
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
// Within a process such limiters cannot both be live (ErrNameClash). The
// constructors keep a process-wide record of names, under a mutex.
// A decision waits for a key's shard at most the dictionary's lock timeout
// (dict.Options.LockTimeout, 1 s by default); past it, a process that
// holds the shard stopped or stuck, the decision returns ErrLockTimeout and
// counts nothing, so the caller's failure policy answers in bounded time.
package limiter
