package redistier

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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

// tieredScript records the host's count of each of its keys in one window
// and returns, per key, the other hosts' total, the host's count as Redis
// holds them, and the key's reset marker. Each key is a hash: per host its
// count and the sequence number of the flush that wrote it ("host:s"), so
// that a round trip that timed out on the caller's side but ran later, or
// runs twice, never counts twice nor overwrites a newer count; and, once
// reset, "reset", the marker that Reset wrote (tieredreset.go). A host's
// count is written only when the marker it sends is at least the key's: a
// count sent by a host that had not learned of the last reset is refused,
// and the host learns the marker from the reply. A key expires two windows
// after it opened. KEYS: prefix:key:window for each key; ARGV: host, seq,
// ttl_ms, then per key the host's count and its marker (0 for none).
// Reply: per key {1, others, own, marker}, or {0, 0, 0, 0} for a key that
// holds a state no flush or reset writes (a bad state), which it leaves as
// it is: another type, a field named other than "host", "host:s" (a host
// being decimal digits) or "reset", a value that is not an integer in
// decimal as Lua prints it, a value below 0 or beyond 2^53, a total of the
// hosts' counts beyond 2^53, a sequence number or marker below 1; then the
// server's TIME in ms.
var tieredScript = redis.NewScript(`
local host, seq, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local seqf, match, format, lim = host .. ':s', string.match, string.format, 2^53
local t = redis.call('TIME')
local out, o = {}, 0
for i = 1, #KEYS do
  local k = KEYS[i]
  local all = redis.pcall('HGETALL', k)
  local ok, s, own, others, r = not all.err, -1, 0, 0, 0
  if ok then
    for j = 1, #all, 2 do
      local f, v = all[j], tonumber(all[j + 1])
      if not (v and v % 1 == 0 and v >= 0 and v <= lim and format('%d', v) == all[j + 1]) then ok = false break end
      local isSeq = match(f, '^%d+:s$')
      if (isSeq or f == 'reset') and v < 1 then ok = false break end
      if f == seqf then s = v
      elseif f == host then own = v
      elseif f == 'reset' then r = v
      elseif match(f, '^%d+$') then others = others + v
      elseif not isSeq then ok = false break end
    end
    ok = ok and others + own <= lim
  end
  if not ok then
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 0, 0, 0, 0
  else
    if seq > s and tonumber(ARGV[3 + 2 * i]) >= r then
      own = tonumber(ARGV[2 + 2 * i])
      redis.call('HSET', k, host, ARGV[2 + 2 * i], seqf, ARGV[2])
      if #all == 0 then redis.call('PEXPIRE', k, ttl) end
    end
    out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 1, others, own, r
  end
  o = o + 4
end
out[o + 1] = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return out
`)

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
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	add := func(w int64, key string, prev bool) {
		ok := l.zkey(w, key, "|c|o")
		c, err := l.intAt(ok[:len(ok)-2])
		var r int64
		if err == nil {
			r, err = l.intAt(ok[:len(ok)-4] + "|r")
		}
		if err != nil {
			keep(err)
			if prev {
				keep(l.relist(w, key))
			}
			return
		}
		// A count below 0 is an overdraft that take has not yet given back:
		// Redis holds no count below 0 (tieredScript).
		items = append(items, flushItem{key: key, others: ok, win: w, n: max(c, 0), mark: r, prev: prev, pos: len(items)})
	}
	seen := l.seen
	lk := l.zkey(win-1, "keys", "")
	n, err := l.d.LLen(lk)
	keep(listErr(err))
	var popped []string
	for ; n > 0; n-- {
		v, err := l.d.LPop(lk)
		if err != nil {
			break // expired meanwhile
		}
		popped = append(popped, v.String())
	}
	for _, k := range popped {
		add(win-1, k, true)
	}
	if seen.win == win-1 && listErr(err) == nil && seen.lost(popped) {
		lost, err := l.lostKeys(win-1, popped)
		keep(err)
		l.relisted.Add(uint64(len(lost)))
		for _, k := range lost {
			add(win-1, k, true) // listed again unless Redis gets its count
		}
	}
	lk = l.zkey(win, "keys", "")
	cur, err := l.d.LRange(lk)
	if err = listErr(err); err != nil {
		keep(err)
		if seen.win != win { // a previous window's, whose list is popped
			l.seen = listSeen{}
		}
		return items, first
	}
	listed := strs(cur)
	for _, k := range listed {
		add(win, k, false)
	}
	l.seen = listSeen{win: win, n: len(listed), sum: listSum(listed)}
	if seen.win != win || !seen.lost(listed) {
		return items, first
	}
	lost, err := l.lostKeys(win, listed)
	keep(err)
	l.relisted.Add(uint64(len(lost)))
	short := err != nil
	for _, k := range lost {
		add(win, k, false)
		if err := l.relist(win, k); err != nil {
			short = true
			if !errors.Is(err, dict.ErrNoMemory) { // a full shard: the next flush scans again
				keep(err)
			}
		}
	}
	// What the next flush must find first: the list with the keys pushed
	// back, and any a decision pushed meanwhile.
	if cur, err = l.d.LRange(lk); listErr(err) != nil {
		keep(listErr(err))
		cur, short = nil, true
	}
	listed = strs(cur)
	l.seen = listSeen{win: win, n: len(listed), sum: listSum(listed), short: short}
	return items, first
}

func listErr(err error) error {
	if err == nil || errors.Is(err, dict.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("redistier: tiered key list: %w", err)
}

// scripts groups items into script runs of at most flushScriptKeys keys:
// any keys on one server, the keys of one hash slot on a Cluster, one key
// on another client (a Ring shards by key). The runs share items' array,
// reordered on a Cluster.
func (l *Tiered) scripts(items []flushItem) [][]flushItem {
	var runs [][]flushItem
	switch l.c.(type) {
	case *redis.Client:
		for len(items) > 0 {
			n := min(len(items), flushScriptKeys)
			runs, items = append(runs, items[:n:n]), items[n:]
		}
	case *redis.ClusterClient:
		// A counting sort by slot: each item moves once.
		at := make([]int, slots+1)
		for i := range items {
			items[i].slot = slot(l.redisKey(items[i]))
			at[items[i].slot+1]++
		}
		for i := 1; i <= slots; i++ {
			at[i] += at[i-1]
		}
		sorted := make([]flushItem, len(items))
		for _, it := range items {
			sorted[at[it.slot]] = it
			at[it.slot]++
		}
		items = sorted
		for len(items) > 0 {
			n := 1
			for n < len(items) && n < flushScriptKeys && items[n].slot == items[0].slot {
				n++
			}
			runs, items = append(runs, items[:n:n]), items[n:]
		}
	default:
		for i := range items {
			runs = append(runs, items[i:i+1:i+1])
		}
	}
	return runs
}

// redisKey is the Redis key of an item: "prefix:key:window".
func (l *Tiered) redisKey(it flushItem) string {
	return l.key(it.key + ":" + strconv.FormatInt(it.win, 10))
}

// trips groups script runs into round trips of at most flushTripKeys keys.
func trips(runs [][]flushItem) [][][]flushItem {
	var ts [][][]flushItem
	for len(runs) > 0 {
		n, keys := 1, len(runs[0])
		for n < len(runs) && keys+len(runs[n]) <= flushTripKeys {
			keys += len(runs[n])
			n++
		}
		ts, runs = append(ts, runs[:n:n]), runs[n:]
	}
	return ts
}

// tripResult is a round trip's answers (see roundTrip) and when it was sent.
type tripResult struct {
	trip    [][]flushItem
	start   time.Time
	replies [][]int64
	errs    []error
	err     error
}

// send sends items in round trips, stores Redis's answers, and reports
// which items Redis got, by position. A goroutine sends the round trips one
// after another while this one stores the answers of the one before: the
// zone's work overlaps Redis's. It stops at the first round trip that fails
// or once the lease has lapsed, and returns once the sender has ended.
func (l *Tiered) send(ctx context.Context, host string, seq int64, items []flushItem) (sent []bool, first error) {
	sent = make([]bool, len(items))
	ts := trips(l.scripts(slices.Clone(items)))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan tripResult)
	go func() {
		defer close(results)
		for _, trip := range ts {
			res := tripResult{trip: trip, start: time.Now()}
			res.replies, res.errs, res.err = l.roundTrip(ctx, host, seq, trip)
			results <- res
			if res.err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range results { // the round trip under way, if any, is cut short
		}
	}()
	ttl := time.Duration(2*l.window) * time.Millisecond
	for res := range results {
		if res.err != nil {
			err := res.err
			if parent.Err() != nil {
				return sent, errors.Join(first, err) // the caller's, not Redis's
			}
			if l.judge(res.start, err) {
				err = errors.Join(err, l.mark(false))
			}
			return sent, errors.Join(first, err)
		}
		l.fails = 0
		if held, err := l.renewLease(); !held || err != nil {
			return sent, errors.Join(first, err)
		}
		if err := l.mark(true); err != nil {
			return sent, errors.Join(first, err)
		}
		if err := l.noteTime(res.replies); err != nil {
			return sent, errors.Join(first, err)
		}
		for r, run := range res.trip {
			if res.errs[r] != nil {
				if first == nil {
					first = res.errs[r]
				}
				continue
			}
			rep := res.replies[r]
			for j, it := range run {
				var held bool
				var err error
				switch {
				case rep[4*j] != 1:
					if first == nil {
						first = fmt.Errorf("%w: tiered %s: its Redis hash holds a state no flush writes", ErrBadState, l.redisKey(it))
					}
					held, err = l.markBad(it)
				case it.prev:
					sent[it.pos] = true
					continue
				default:
					sent[it.pos] = true
					if held, err = l.learn(it, rep[4*j+3]); held && err == nil {
						held, err = l.fencedSet(it.others, dict.Int(rep[4*j+1]), ttl)
					}
				}
				if err != nil || !held {
					if err != nil {
						err = fmt.Errorf("redistier: tiered %s: %w", it.key, err)
					}
					return sent, errors.Join(first, err)
				}
			}
		}
	}
	return sent, first
}

// roundTrip runs the scripts of trip in one pipeline within the timeout
// (EVALSHA, then EVAL for those Redis does not have) and returns each
// script's reply or its ErrScript error; err, wrapping ErrUnavailable, when
// Redis could not be reached or answered that it cannot serve.
func (l *Tiered) roundTrip(ctx context.Context, host string, seq int64, trip [][]flushItem) (replies [][]int64, errs []error, err error) {
	keys, args := make([][]string, len(trip)), make([][]any, len(trip))
	ttl, sq := strconv.FormatInt(2*l.window, 10), strconv.FormatInt(seq, 10)
	for r, run := range trip {
		keys[r], args[r] = make([]string, len(run)), make([]any, 3, 3+2*len(run))
		args[r][0], args[r][1], args[r][2] = host, sq, ttl
		for j, it := range run {
			keys[r][j] = l.redisKey(it)
			args[r] = append(args[r], it.n, it.mark)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(trip))
	pipe := l.c.Pipeline()
	for r := range trip {
		cmds[r] = tieredScript.EvalSha(ctx, pipe, keys[r], args[r]...)
	}
	pipe.Exec(ctx) // the errors are the commands'
	l.calls.Add(uint64(len(trip)))
	var again []int
	for r, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			again = append(again, r)
		}
	}
	if len(again) > 0 {
		pipe = l.c.Pipeline()
		for _, r := range again {
			cmds[r] = tieredScript.Eval(ctx, pipe, keys[r], args[r]...)
		}
		pipe.Exec(ctx) // the same runs, as Script.Run does: not counted again
	}
	replies, errs = make([][]int64, len(trip)), make([]error, len(trip))
	for r, c := range cmds {
		rep, cerr := c.Int64Slice()
		switch {
		case cerr != nil && !isScriptErr(cerr):
			if ctx.Err() != context.Canceled { // not cut short by the flush itself
				l.errs.Add(uint64(len(trip)))
			}
			return nil, nil, fmt.Errorf("%w: tiered %s: %w", ErrUnavailable, l.prefix, cerr)
		case cerr != nil:
			errs[r] = fmt.Errorf("%w: tiered %s: %w", ErrScript, l.redisKey(trip[r][0]), cerr)
		case len(rep) != 4*len(trip[r])+1:
			errs[r] = fmt.Errorf("%w: tiered %s: %d values for %d keys", ErrScript, l.redisKey(trip[r][0]), len(rep), len(trip[r]))
		}
		if errs[r] != nil {
			l.errs.Add(1)
		}
		replies[r] = rep
	}
	return replies, errs, nil
}

// probe is a flush with nothing to send: it asks Redis nothing while the
// host considers Redis healthy, and a PING while it considers it failed,
// whose answer is judged as a round trip's, so that a host with no key
// counted (its decisions go by the policy) learns that Redis is back.
func (l *Tiered) probe(ctx context.Context) error {
	if h, err := l.intAt(l.hk); err != nil || h >= 0 {
		return err
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	if err := l.c.Ping(pctx).Err(); err != nil {
		err = fmt.Errorf("%w: tiered %s: %w", ErrUnavailable, l.prefix, err)
		if ctx.Err() == nil && l.judge(start, err) {
			err = errors.Join(err, l.mark(false))
		}
		return err
	}
	l.fails = 0
	if held, err := l.renewLease(); !held || err != nil {
		return err
	}
	return l.mark(true)
}

// judge records that a round trip sent at start failed with err and
// reports whether Redis is now failed for the host: the round trips of two
// flushes in a row failed, and, when the last timed out (which a process
// too busy to read an answer in time can cause as well), the first of them
// was sent at least the stale time (5 intervals plus the timeout) ago.
func (l *Tiered) judge(start time.Time, err error) bool {
	if l.fails == 0 {
		l.failSince = start
	}
	l.fails++
	return l.fails >= 2 && (!timedOut(err) || time.Since(l.failSince) >= time.Duration(l.stale)*time.Millisecond)
}

// mark stores Redis's health for the host while this instance holds the
// lease: good, the time of the answer just read (the latest kept);
// failed, the last good time negated (-1 when none).
func (l *Tiered) mark(good bool) error {
	now := l.o.Now().UnixMilli()
	err := l.d.Update(l.hk, func(cur dict.Value, _ bool) (dict.Value, time.Duration, bool) {
		if l.d.Now() >= l.leaseEnd {
			return dict.Value{}, 0, true
		}
		var last int64
		if cur.Kind() == dict.KindInt {
			last = max(cur.Int(), -cur.Int())
		}
		if good {
			return dict.Int(max(last, now)), 0, true
		}
		return dict.Int(-max(last, 1)), 0, true
	})
	if err != nil {
		return fmt.Errorf("redistier: tiered health: %w", err)
	}
	return nil
}

// takeLease takes the host's flusher lease or renews it when this instance
// holds it, and reports whether it holds it. It records when the lease
// ends by the zone's clock (at the earliest), and forgets the list the
// last flush saw when it takes a lease that had lapsed.
func (l *Tiered) takeLease() (bool, error) {
	k, lease := l.zp+"lease", time.Duration(l.lease)*time.Millisecond
	at := l.d.Now()
	_, err := l.d.Add(k, dict.Int(l.id), lease, 0)
	if err == nil {
		// Another instance may have flushed since this one last did,
		// and popped the list it saw.
		l.seen = listSeen{}
	}
	if errors.Is(err, dict.ErrExists) {
		var mine bool
		mine, err = l.d.CompareAndSwap(k, dict.Int(l.id), dict.Int(l.id), lease)
		if errors.Is(err, dict.ErrNotFound) { // expired meanwhile
			return l.takeLease()
		}
		if err == nil && !mine {
			return false, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	}
	l.leaseEnd = at + l.lease
	return true, nil
}

// renewLease extends the lease this instance has held without a break
// since its last renewal, and reports whether it did: false when the lease
// expired meanwhile (another process may have flushed since) or another
// instance holds it.
func (l *Tiered) renewLease() (bool, error) {
	k, lease := l.zp+"lease", time.Duration(l.lease)*time.Millisecond
	at := l.d.Now()
	mine, err := l.d.CompareAndSwap(k, dict.Int(l.id), dict.Int(l.id), lease)
	switch {
	case errors.Is(err, dict.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redistier: tiered lease: %w", err)
	case mine:
		l.leaseEnd = at + l.lease
	}
	return mine, nil
}

// fencedSet stores v under k, with ttl, unless this instance's lease has
// ended by the zone's clock when the shard is locked; it reports whether it
// stored it.
func (l *Tiered) fencedSet(k string, v dict.Value, ttl time.Duration) (bool, error) {
	held := true
	err := l.d.Update(k, func(dict.Value, bool) (dict.Value, time.Duration, bool) {
		if l.d.Now() >= l.leaseEnd {
			held = false
			return dict.Value{}, 0, true
		}
		return v, ttl, true
	})
	return held && err == nil, err
}

// hostID returns the host's id in Redis, drawn at random by the first
// flusher of the zone and kept there.
func (l *Tiered) hostID() (string, error) {
	k := l.zp + "host"
	var b [8]byte
	rand.Read(b[:])
	if _, err := l.d.Add(k, dict.Int(int64(binary.LittleEndian.Uint64(b[:])>>1)), 0, 0); err != nil && !errors.Is(err, dict.ErrExists) {
		return "", fmt.Errorf("redistier: tiered host id: %w", err)
	}
	id, err := l.intAt(k)
	return strconv.FormatInt(id, 10), err
}

// timedOut reports whether err says that an answer did not come in time,
// which the flusher's own scheduling can cause, rather than that Redis
// refused or dropped the connection or answered with an error.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || (errors.As(err, &ne) && ne.Timeout())
}

// slots is the number of Redis Cluster hash slots.
const slots = 16384

// crc16tab is the table of CRC16-CCITT (XMODEM: polynomial 0x1021, initial
// value 0), the checksum of Redis Cluster's key hash.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for b := 0; b < 8; b++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// slot returns the Redis Cluster hash slot of key: CRC16 of the key, or of
// its hash tag (the text between its first "{" and the next "}", when not
// empty), modulo 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^key[i]]
	}
	return int(crc) % slots
}
