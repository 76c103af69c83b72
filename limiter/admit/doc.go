// Package admit is the decision step of a rate limiting middleware, for any
// HTTP framework: it asks a limiter about a request, writes the rate limit
// headers (package headers) through the framework's header setter, waits
// out an allowed request's delay, and ends a concurrency limiter's request
// when the handler is done. httplimit (net/http), contrib/fiber and
// contrib/fasthttp are a Gate plus their framework's request and response.
//
//	g, _ := admit.New(l, admit.Options{})
//	d, pass, err := g.Admit(ctx, key, w.Header().Set)
//	switch {
//	case errors.Is(err, admit.ErrCancelled):
//		// 503: the client went away while its request was delayed
//	case err != nil:
//		// 500, or the next handler to fail open
//	case !d.Allowed:
//		// 429: the headers and Retry-After are set
//	default:
//		defer pass.Done()
//		// the next handler
//	}
//
// Invariants:
//
//	I1. Every request Admit or AdmitN commits is given back or ended, its
//	    whole cost: a request cancelled while delayed is uncommitted (a
//	    Conn's left), and an admitted Conn request is left by Pass.Done.
//	I2. The headers announce the limiter's policy as it is at the decision
//	    (a Conn's SetMax changes it), unless Options fixes one.
//	I3. A rejection always carries Retry-After, whatever NoHeaders says.
//
// Options.DryRun tries a limit out: the limiter decides and commits, but
// nothing is rejected or delayed. A limiter of package limiter also runs
// dry while an operator switches its dry run on live (SetDryRun, shmctl
// limits set --dry-run). Stats counts the would-be rejections in this
// process only. A limiter of package limiter also counts them in its
// zone, for every process: its DryRunRejected method.
//
// Concurrency: a Gate is safe for use by many goroutines; it keeps only the
// headers' Writer of the last policy seen, and its Stats.
package admit
