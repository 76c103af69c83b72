package redistier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// A flush sends the host's counts in round trips of at most flushTripKeys
// keys, each a pipeline of script runs of at most flushScriptKeys keys (one
// hash slot each on a Cluster). A script run holds Redis for under a
// millisecond, a round trip for a few: well within a timeout of tens of ms,
// even for a process that the race detector or a busy processor slows.
const (
	flushScriptKeys = 256
	flushTripKeys   = 1024
)

// flushItem is one key to send: the zone key of the other hosts' count
// ("…|c|o"), its window, the host's count, the reset marker the host knows
// for it, whether it is of the previous window (popped from its list,
// pushed back unless Redis got its count), its position in the flush's
// list, and its hash slot.
type flushItem struct {
	key, others string
	win         int64
	n, mark     int64
	prev        bool
	pos, slot   int
}

// Flush takes or renews the host's flusher lease. If this instance holds
// it, Flush sends Redis the count of every key of the current window. It
// sends once more the count of every key of the previous window. It stores
// the other hosts' count of each current key that Redis returns. Flush
// reports whether this instance flushed.
//
// The keys go in few round trips. Each is a pipeline of script runs. On one
// server a run carries up to 256 keys. On a Cluster it carries keys of one
// hash slot, and on another sharded client one key. A round trip carries
// at most 1,024 keys, within Options.Timeout. A round trip that fails ends
// the flush. The keys not sent keep their counts for the next.
//
// A key whose Redis hash holds a state no flush writes fails alone, with
// ErrBadState. Flush leaves the hash as it is, and marks the key bad in
// the zone. The key's decisions then return ErrBadState until a flush
// reads a good state. Redis answered, so the round trip still counts as
// answered.
//
// Before it stores a round trip's answers in the zone, Flush renews its
// lease. It stores nothing once the lease has lapsed. So it never
// overwrites the answers, or the bad marks, of a flusher that took over.
// Redis refuses the count of a key reset since the host last learned of a
// reset. Flush then records the key's reset marker, and drops from the
// host's count what it sent.
//
// Each answered round trip marks Redis healthy for the host, with the time
// of the answer. Failed round trips mark it failed, as Tiered says. With
// nothing to send, Flush asks Redis nothing, unless Redis is failed. It
// then sends a PING.
//
// One flush of an instance runs at a time. While it runs, the instance's
// decisions yield the processor to it. So a process busy deciding does not
// starve the flush that keeps its counts global.
//
// Flush returns its errors joined, as errors.Join does. It returns
// ErrUnavailable for a failed round trip, ErrBadState for a bad key, and
// ErrScript for a script run that failed. It also returns the dictionary's
// errors.
func (l *Tiered) Flush(ctx context.Context) (bool, error) {
	l.called.Store(l.o.Now().UnixMilli())
	l.fmu.Lock()
	defer l.fmu.Unlock()
	l.flushing.Store(true)
	defer l.flushing.Store(false)
	if held, err := l.takeLease(); !held || err != nil {
		return false, err
	}
	host, err := l.hostID()
	if err != nil {
		return false, err
	}
	// Seeded from the clock in µs, an evicted sequence starts again above
	// every number this host sent before (at most 1,000 flushes a ms),
	// which Redis keeps per key: it would refuse smaller ones.
	seq, _, err := l.d.IncrInit(l.zp+"seq", 1, max(l.o.Now().UnixMilli(), 0)*1000, 0)
	if err != nil {
		return false, fmt.Errorf("redistier: tiered sequence: %w", err)
	}
	l.flushes.Add(1)
	win := l.o.Now().UnixMilli() / l.window
	items, first := l.collect(win)
	if len(items) == 0 {
		return true, errors.Join(first, l.probe(ctx))
	}
	sent, err := l.send(ctx, host, seq, items)
	first = errors.Join(first, err)
	// The previous window's keys whose count Redis did not get stay listed.
	for i := range items {
		if items[i].prev && !sent[i] {
			first = errors.Join(first, l.relist(win-1, items[i].key))
		}
	}
	return true, first
}

// relist lists key of window win again, at the end of its list; a list it
// creates expires as a decision's would.
func (l *Tiered) relist(win int64, key string) error {
	lk := l.zkey(win, "keys", "")
	n, err := l.d.RPush(lk, dict.String(key))
	if err == nil && n == 1 {
		err = l.d.Expire(lk, time.Duration(2*l.window)*time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("redistier: tiered key list: %w", err)
	}
	return nil
}

// collect returns the keys to send: the previous window's, popped from its
// list, then every key listed for the current window, and the keys of
// either list that the zone counts but an eviction took from the list
// (tieredlost.go), which it lists again. A key whose count or reset marker
// cannot be read is left out (a previous window's stays listed), with the first error.
func (l *Tiered) collect(win int64) (items []flushItem, first error) {
	var c collection
	seen := l.seen
	l.collectPrevious(&c, win-1, seen)
	l.collectCurrent(&c, win, seen)
	return c.items, c.first
}

// collection is what collect gathers: the items to send and the first
// error.
type collection struct {
	items []flushItem
	first error
}

// keep records err unless an error came before.
func (c *collection) keep(err error) {
	if err != nil && c.first == nil {
		c.first = err
	}
}

// collectKey adds key of window w to c, with its count and reset marker.
// prev says the key is of the previous window. A key whose count or marker
// cannot be read is left out, and listed again if prev.
func (l *Tiered) collectKey(c *collection, w int64, key string, prev bool) {
	ok := l.zkey(w, key, "|c|o")
	n, err := l.intAt(ok[:len(ok)-2])
	var r int64
	if err == nil {
		r, err = l.intAt(ok[:len(ok)-4] + "|r")
	}
	if err != nil {
		c.keep(err)
		if prev {
			c.keep(l.relist(w, key))
		}
		return
	}
	// A count below 0 is an overdraft that take has not yet given back:
	// Redis holds no count below 0 (tieredScript).
	c.items = append(c.items, flushItem{key: key, others: ok, win: w, n: max(n, 0), mark: r, prev: prev, pos: len(c.items)})
}

// collectPrevious pops the list of window win, the previous one, and adds
// its keys to c. If seen shows that the list lost keys, it adds those the
// zone counts too.
func (l *Tiered) collectPrevious(c *collection, win int64, seen listSeen) {
	lk := l.zkey(win, "keys", "")
	n, err := l.d.LLen(lk)
	c.keep(listErr(err))
	var popped []string
	for ; n > 0; n-- {
		v, err := l.d.LPop(lk)
		if err != nil {
			break // expired meanwhile
		}
		popped = append(popped, v.String())
	}
	for _, k := range popped {
		l.collectKey(c, win, k, true)
	}
	if seen.win == win && listErr(err) == nil && seen.lost(popped) {
		lost, err := l.lostKeys(win, popped)
		c.keep(err)
		l.relisted.Add(uint64(len(lost)))
		for _, k := range lost {
			l.collectKey(c, win, k, true) // listed again unless Redis gets its count
		}
	}
}

// collectCurrent adds to c every key listed for window win, the current
// one, and records the list in l.seen. If seen shows that the list lost
// keys, it adds those the zone counts too, and lists them again.
func (l *Tiered) collectCurrent(c *collection, win int64, seen listSeen) {
	lk := l.zkey(win, "keys", "")
	cur, err := l.d.LRange(lk)
	if err = listErr(err); err != nil {
		c.keep(err)
		if seen.win != win { // a previous window's, whose list is popped
			l.seen = listSeen{}
		}
		return
	}
	listed := strs(cur)
	for _, k := range listed {
		l.collectKey(c, win, k, false)
	}
	l.seen = listSeen{win: win, n: len(listed), sum: listSum(listed)}
	if seen.win != win || !seen.lost(listed) {
		return
	}
	l.collectRelisted(c, win, lk, listed)
}

// collectRelisted adds to c the keys of window win that the zone counts
// but listed lacks. listed is the window's list lk as collectCurrent read
// it. collectRelisted pushes those keys back onto lk. It then reads lk
// again and records it in l.seen.
func (l *Tiered) collectRelisted(c *collection, win int64, lk string, listed []string) {
	lost, err := l.lostKeys(win, listed)
	c.keep(err)
	l.relisted.Add(uint64(len(lost)))
	short := err != nil
	for _, k := range lost {
		l.collectKey(c, win, k, false)
		if err := l.relist(win, k); err != nil {
			short = true
			if !errors.Is(err, dict.ErrNoMemory) { // a full shard: the next flush scans again
				c.keep(err)
			}
		}
	}
	// What the next flush must find first: the list with the keys pushed
	// back, and any a decision pushed meanwhile.
	cur, err := l.d.LRange(lk)
	if listErr(err) != nil {
		c.keep(listErr(err))
		cur, short = nil, true
	}
	listed = strs(cur)
	l.seen = listSeen{win: win, n: len(listed), sum: listSum(listed), short: short}
}

func listErr(err error) error {
	if err == nil || errors.Is(err, dict.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("redistier: tiered key list: %w", err)
}
