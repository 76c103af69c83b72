package limiter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// Inspection. Each constructor records its limiter's numbers in its zone,
// under the zone key "meta|kind|name", as a JSON object, with its pid and
// time. The newest construction's record holds the built numbers that
// every process of the limiter decides by (tune.go). A process that did
// not build the limiter reads how near each of its clients is to the
// limit (Clients; shmctl limits). A flood of new keys may evict the
// record; the live numbers of the zone's registry stay (DESIGN.md,
// section 12). No limiter's zone key begins with "meta|", as no kind is
// "meta".

// metaKind is the first part of the zone key of a parameter record.
const metaKind = "meta"

// record is a limiter's parameters as its zone records them. Each kind
// sets the fields its constructor takes.
type record struct {
	Rate     float64 `json:"rate,omitempty"`      // Req, GCRA: requests per second
	Burst    float64 `json:"burst,omitempty"`     // Req, GCRA, Conn
	Limit    int64   `json:"limit,omitempty"`     // Count, SlidingWindow; Conn's max
	WindowNs int64   `json:"window_ns,omitempty"` // Count, SlidingWindow
	DelayNs  int64   `json:"delay_ns,omitempty"`  // Conn's delay per connection over max
	LeaseMs  int64   `json:"lease_ms,omitempty"`  // a leased Conn's lease
	Pid      int     `json:"pid,omitempty"`       // the process that built it
	AtMs     int64   `json:"at_ms,omitempty"`     // when, Unix ms
	Applied  int64   `json:"applied,omitempty"`   // Count: the limit its open windows got last (applyonce.go)
	Seq      uint64  `json:"seq,omitempty"`       // Count: the claims made (applyonce.go)
	dryRun   bool    // a live dry run is in force; never recorded
}

// numbers returns r without who built it, when, and the claims made.
func (r record) numbers() record {
	r.Pid, r.AtMs, r.Applied, r.Seq = 0, 0, 0, 0
	return r
}

// Client is one key of one limiter, as one more request of it would find it
// now.
type Client struct {
	// Kind is the limiter's kind: req, count, conn, lconn, sw or gcra.
	// lconn is a leased Conn, and sw a SlidingWindow.
	Kind string
	// Name is the limiter's name, and Key the client's key.
	Name, Key string
	// Known reports whether the zone records the limiter's parameters.
	// Decision is set only then.
	Known bool
	// Decision is a dry run of one request of the client now. Allowed is
	// false for a client at or over its limit. The dry run sets Remaining
	// and ResetAfter, and Delay for a Req or a Conn. A Count's ResetAfter
	// is its window's end.
	Decision Decision
	// Err is the dry run's error, such as ErrBadState for a key whose value
	// no limiter wrote.
	Err error
}

// Clients calls fn with each client of each limiter of this package whose
// state d holds. It goes in the order dict.Scan finds them. It stops at the
// first error fn returns. d may be a read-only view of a zone that other
// processes write.
//
// A limiter is known by the parameters its zone records. Clients builds it
// from them, and makes a dry run of one request for each client.
//
// Clients returns fn's error, or else the error of d.Scan.
func Clients(ctx context.Context, d *dict.Dict, fn func(Client) error) error {
	type meta struct {
		l     Limiter
		known bool
	}
	built := map[string]meta{} // by "kind|name"
	var ferr error
	err := d.Scan(func(it dict.Item) bool {
		kind, rest, ok := strings.Cut(it.Key, "|")
		if !ok || !isKind(kind) {
			return true
		}
		name, key, ok := strings.Cut(rest, "|")
		if !ok {
			return true
		}
		id := kind + "|" + name
		m, seen := built[id]
		if !seen {
			l, err := fromRecord(d, kind, name)
			m = meta{l, err == nil}
			built[id] = m
		}
		c := Client{Kind: kind, Name: name, Key: key, Known: m.known}
		if m.known {
			c.Decision, c.Err = m.l.Incoming(ctx, key, false)
			// A Count tells its reset on a rejection alone.
			if r, ok := m.l.(interface {
				ResetAfter(context.Context, string) (time.Duration, error)
			}); ok && c.Err == nil && c.Decision.ResetAfter == 0 {
				c.Decision.ResetAfter, c.Err = r.ResetAfter(ctx, key)
			}
		}
		if ferr = fn(c); ferr != nil {
			return false
		}
		return true
	})
	if ferr != nil {
		return ferr
	}
	return err
}

// isKind reports whether kind is a kind of this package's limiters.
func isKind(kind string) bool {
	switch kind {
	case kindReq, kindCount, kindConn, kindLeasedConn, kindSW, kindGCRA:
		return true
	}
	return false
}

// fromRecord builds the limiter of kind named name from the parameters d
// records for it.
func fromRecord(d *dict.Dict, kind, name string) (Limiter, error) {
	v, _, err := d.Get(metaKind + "|" + kind + "|" + name)
	if err != nil {
		return nil, err
	}
	if v.Kind() != dict.KindBytes {
		return nil, fmt.Errorf("limiter: no record of %s %q", kind, name)
	}
	var r record
	if err := json.Unmarshal(v.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("limiter: record of %s %q: %w", kind, name, err)
	}
	window := time.Duration(r.WindowNs)
	delay := time.Duration(r.DelayNs)
	switch kind {
	case kindReq:
		return NewReq(d, name, r.Rate, r.Burst)
	case kindCount:
		return NewCount(d, name, r.Limit, window)
	case kindSW:
		return NewSlidingWindow(d, name, r.Limit, window)
	case kindGCRA:
		return NewGCRA(d, name, r.Rate, int64(r.Burst))
	case kindConn:
		return NewConn(d, name, r.Limit, int64(r.Burst), delay)
	case kindLeasedConn:
		return NewLeasedConn(d, name, r.Limit, int64(r.Burst), delay, time.Duration(r.LeaseMs)*time.Millisecond)
	}
	return nil, fmt.Errorf("limiter: no kind %q", kind)
}
