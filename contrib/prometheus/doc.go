// Package shmprom exports shmzone's figures to Prometheus through
// client_golang: a Collector of dictionaries' Stats and of limiters'
// decisions and full-zone counts (limiter.Stats: Forcible, Retries, and
// Evicted, the decisions that found their key's state lost to eviction,
// which with the zone's shmzone_lost_total tells a zone too small for its
// clients).
//
// A limiter's decisions are counted by the Limiter that AddLimiter returns,
// which wraps the limiter and keeps its optional methods (Policy,
// ResetAfter, Leaving), so that middleware over it (httplimit, shmfiber,
// shmfasthttp) writes the same headers and leaves a Conn's requests as
// over the limiter itself.
//
// Invariants:
//
//	I1. Every decision of a wrapped limiter is counted once, as allowed,
//	    rejected or error; dry runs (commit false) included.
//	I2. A scrape reads each dictionary's Stats once, one shard at a time,
//	    as dict.Stats does.
//	I3. A scrape exports no figure of a closed (or faulted) Dict: its
//	    Stats are zeros, which would read as a counter reset and an empty
//	    zone. RemoveDict and RemoveLimiter free a name for a new Add.
//
// Concurrency: a Collector and its Limiters are safe for concurrent use by
// goroutines; RemoveDict returns when no scrape reads the Dict, which may
// then be closed. The counts are this process's: each process, a prefork child
// among them, exports its own decisions, while every process that opens a
// zone exports the same zone-wide dictionary figures.
package shmprom
