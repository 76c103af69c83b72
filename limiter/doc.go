// Package limiter is rate limiting over a shared dictionary (package dict).
// Every process of a host that opens the same zone shares one limit. It
// gives Go what lua-resty-limit-traffic gives OpenResty's workers.
//
//   - Req is a leaky bucket with delay (resty.limit.req).
//   - Count is a fixed window (resty.limit.count).
//   - Conn limits concurrency (resty.limit.conn). NewLeasedConn frees the
//     slots of a killed process.
//   - SlidingWindow weighs two fixed windows.
//   - GCRA gives go-redis/redis_rate's results.
//   - Combine puts one request under several limiters.
//   - ParseRate reads rate strings such as "10r/s".
//
// Package httplimit is net/http middleware over any Limiter.
//
// IncomingN charges a cost n, all admitted or none. Incoming is IncomingN
// of 1. UncommitN gives a cost back. Reset deletes a key's state.
//
// A limiter keeps key k's state under the zone key "kind|name|k". So one
// dictionary serves any number of limiters.
//
// # Differences from lua-resty-limit-traffic
//
// Req, Count and Conn store what the Lua modules store, bit for bit.
// lua_parity_test.go checks it. They differ where processes need it:
//
//   - Every read-modify-write is atomic. Lua's req may overshoot by a
//     request per worker.
//   - Req's stored time never goes back. A late decision leaks nothing.
//   - Req's state expires once drained. Its Uncommit is then ErrNotFound.
//   - ParseRate refuses an infinite rate.
//   - Conn.Leaving returns the count truncated.
//   - A Decision also says RetryAfter, ResetAfter and Remaining.
//   - Limiters of different kinds or names never share a key.
//
// A full zone evicts the least used states. A client held under a flood of
// new keys stays held. DESIGN.md gives the reasons.
//
// # Invariants
//
//	I1. A rejection has Allowed false and a nil error.
//	I2. A decision that changes a key is one dictionary operation.
//	    Conn's rejected commit is the exception, as in Lua.
//	I3. A decision reads the time once, from dict.Dict.Now.
//	I4. A rejection or a dry run counts nothing. Count's rejected commit
//	    stays counted, as in Lua.
//	I5. A value no limiter writes is ErrAbused or ErrBadState, untouched.
//	I6. Req, Count, plain Conn, SlidingWindow and GCRA decide without
//	    allocating, for keys of up to 56 bytes.
//	I7. A limiter touches only zone keys that begin "kind|name|".
//	I8. A full zone fails only a state larger than an empty shard.
//	I9. A decision uses the numbers in force of its zone. It learns of a
//	    change with one atomic load of the zone's generation.
//
// DESIGN.md, section 8, states each in full.
//
// # Concurrency
//
// Every limiter is safe for use by many goroutines. Processes with the
// same limiter share each key's state. Together they admit what one would.
// A limiter's numbers live in its zone. A construction with other numbers
// replaces them for every process, and the setters (SetRate, SetLimit,
// SetBurst, SetMax) set them live until UnsetLive. Each process's next
// decision uses the numbers in force. SetDryRun switches a dry run live
// the same way: a middleware over the limiter then lets every request
// through. AddDryRunRejected counts its would-be rejections in the zone,
// for every process. In one process, a second live
// limiter of a kind and name with other parameters is ErrNameClash. A decision waits for a shard at most
// dict.Options.LockTimeout, then returns ErrLockTimeout.
package limiter
