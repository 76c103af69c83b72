// Package headers writes the rate limit response headers of a limiter's
// decision, for any HTTP framework: net/http, fasthttp, fiber. It knows no
// framework; a caller hands Write the setter of its response's headers.
//
//	w, _ := headers.New("per-ip", &limiter.Policy{Limit: 100, Window: time.Minute})
//	w.Write(d, d.ResetAfter, rw.Header().Set)
//	if !d.Allowed {
//		rw.Header().Set(headers.RetryAfter, headers.RetryAfterValue(d))
//	}
//
// The headers are RateLimit-Policy and RateLimit of
// draft-ietf-httpapi-ratelimit-headers, in the Structured Fields syntax of
// -08 and later (`"default";q=100;w=60`, or `"default";q=10;qu="concurrent-requests"`
// for a concurrency limit, and `"default";r=42;t=17`), and the common older
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, the reset
// in delta seconds. Retry-After, on a rejection, is whole seconds.
//
// Invariants:
//
//	I1. Every duration goes out in whole seconds rounded up, so a client
//	    that waits what it is told never comes back early.
//	I2. Retry-After is at least 1: a rejection never tells a client to
//	    retry at once (a concurrency limit knows no retry time).
//	I3. A policy name goes out as a quoted sf-string; a name that one
//	    cannot hold is refused by New, never written.
//	I4. Without a policy, only RateLimit, X-RateLimit-Remaining and
//	    X-RateLimit-Reset go out: nothing claims a limit that is not known.
//
// Concurrency: a Writer is immutable after New and safe for use by many
// goroutines. It keeps no state, so across processes there is nothing to
// share.
package headers
