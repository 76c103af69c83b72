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
// # Dry runs
//
// The wrapper passes on DryRun and AddDryRunRejected, so that middleware
// over it runs dry when the limiter's live dry run is on. A limiter of
// package limiter counts the rejections a dry run let through in its
// zone. A scrape reads that count from the zone and exports it as
// shmzone_limiter_dryrun_rejected_total{limiter}. It is the host's exact
// count, whichever process answers, with or without CountHostIn.
//
// "rejected" in shmzone_limiter_decisions_total stays the limiter's own
// decision. A dry run's would-be rejections are counted there too, since
// the limiter rejected them. So dryrun_rejected is the part of rejected
// that a dry run let through. Both count requests. A decision made with
// commit false counts in rejected alone, since no Gate makes it.
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
// then be closed. The decision counts are this process's unless the
// Collector counts them in a zone too (CountHostIn). Every process that
// opens a zone exports the same zone-wide dictionary figures.
//
// # A prefork fleet
//
// Under prefork, each scrape of the shared port reaches one child at
// random. Its own decision counts would make one series jump between the
// children's values. So each child counts into the zone as well:
//
//	c := shmprom.NewCollector()
//	c.AddDict("main", d)
//	c.CountHostIn(d, time.Second) // d: the zone every child opens
//	defer c.Close()               // before d.Close
//	l, _ = c.AddLimiter("per-client", l)
//
// Every child then exports the host's totals as
// shmzone_limiter_decisions_total{limiter,decision}, behind by at most the
// other children's interval. Its own counts stay apart as
// shmzone_limiter_process_decisions_total{limiter,decision,pid}. The
// host series stays right whichever child answers a scrape.
package shmprom
