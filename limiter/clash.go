package limiter

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/shmzone/shmzone/dict"
)

// Clashes. Two limiters of one kind and name over one zone share each
// key's state (names.go). Built with the same parameters, they are one
// limiter: every process builds it, and a process may build it twice.
// Built with other parameters in one process, they are a mistake: a fixed
// window of 3 copied from one of 5 would count its requests against 5. So
// a process keeps a record of its live limiters by zone, kind and name,
// with the parameters they were built with. A constructor refuses a
// limiter whose parameters differ from a live one's (ErrNameClash).
//
// The record is of this process only: processes still share a key's state
// across a change of parameters, as Lua workers do on reload. It holds the
// limiters weakly, so a limiter the process no longer references clashes
// with nothing. Before it reports a clash, a constructor runs the garbage
// collector once, so that a limiter dropped for new parameters is gone.
//
// Every weak pointer is read under claimsMu, and the collector runs with
// it held. A weak pointer read during a collection's mark phase marks its
// object, which would keep a dropped limiter through that collection.

// zoneID tells zones apart: the hash seed is random at creation, and a
// zone created again at the same path gets another.
type zoneID struct {
	seed    uint64
	created int64 // Unix ms
}

// claimKey names a record: a namespace of a zone.
type claimKey struct {
	zone   zoneID
	prefix string // "kind|name|"
}

// claim is the record of one namespace's live limiters.
type claim struct {
	params  string                // what they were built with, as the constructor describes it
	holders []weak.Pointer[space] // the limiters, by their embedded space
}

var (
	claimsMu sync.Mutex
	// claims is the process's record, under claimsMu.
	claims = make(map[claimKey]*claim)
	// claimsSwept is len(claims) after the last sweep of collected
	// records, under claimsMu.
	claimsSwept int
)

// claim records that the limiter embedding sp, built over d with params,
// holds its namespace. params describes every parameter that decides, in
// a form that is equal exactly when the parameters are. Errors:
// ErrNameClash when a live limiter of this process holds the namespace of
// d's zone with other params.
func (sp *space) claim(d *dict.Dict, params string) error {
	h := d.Header()
	k := claimKey{zone: zoneID{seed: h.Seed, created: h.CreatedAt}, prefix: sp.prefix}
	claimsMu.Lock()
	defer claimsMu.Unlock()
	c := claims[k]
	if c != nil && c.params != params && c.prune() > 0 {
		runtime.GC() // limiters dropped for new parameters may not be collected yet
	}
	if c != nil && c.params != params && c.prune() > 0 {
		return fmt.Errorf("%w: %s is built over zone %s with %s; this one has %s",
			ErrNameClash, sp.describe(), d.Path(), c.params, params)
	}
	if c == nil || c.params != params {
		c = &claim{params: params}
		claims[k] = c
	}
	c.holders = append(c.holders, weak.Make(sp))
	sweepClaimsLocked()
	return nil
}

// prune drops the holders that were collected and returns how many are
// left. The caller holds claimsMu.
func (c *claim) prune() int {
	live := c.holders[:0]
	for _, h := range c.holders {
		if h.Value() != nil {
			live = append(live, h)
		}
	}
	clear(c.holders[len(live):])
	c.holders = live
	return len(live)
}

// sweepClaimsLocked drops the records whose limiters were all collected,
// once the record has doubled since the last sweep: the record stays
// within twice the live namespaces, at a constant cost per claim.
func sweepClaimsLocked() {
	if len(claims) < 2*claimsSwept+16 {
		return
	}
	for k, c := range claims {
		if c.prune() == 0 {
			delete(claims, k)
		}
	}
	claimsSwept = len(claims)
}

// describe returns the limiter's kind and name, as an error names them:
// `count "api"`.
func (sp *space) describe() string {
	kind, rest, _ := strings.Cut(sp.prefix, "|")
	return fmt.Sprintf("%s %q", kind, strings.TrimSuffix(rest, "|"))
}
