package redistier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
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
	s := sending{sent: make([]bool, len(items))}
	ts := trips(l.scripts(slices.Clone(items)))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	results := l.sendTrips(ctx, host, seq, ts)
	defer func() {
		cancel()
		for range results { // the round trip under way, if any, is cut short
		}
	}()
	ttl := time.Duration(2*l.window) * time.Millisecond
	for res := range results {
		if res.err != nil {
			return s.sent, errors.Join(s.first, l.tripFailed(parent, res))
		}
		if more, err := l.storeTrip(&s, res, ttl); !more {
			return s.sent, errors.Join(s.first, err)
		}
	}
	return s.sent, s.first
}

// sending is what send records: which items Redis got, by position, and
// the first error of a script run or a key.
type sending struct {
	sent  []bool
	first error
}

// sendTrips starts a goroutine that runs the round trips ts one after
// another. It passes each one's result on the channel it returns. It stops
// after the first round trip that fails, and closes the channel.
func (l *Tiered) sendTrips(ctx context.Context, host string, seq int64, ts [][][]flushItem) <-chan tripResult {
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
	return results
}

// tripFailed returns the error of res, a round trip that failed. If parent,
// the caller's context, is still live, Redis failed. tripFailed then marks
// Redis failed for the host once judge says so.
func (l *Tiered) tripFailed(parent context.Context, res tripResult) error {
	err := res.err
	if parent.Err() != nil {
		return err // the caller's, not Redis's
	}
	if l.judge(res.start, err) {
		err = errors.Join(err, l.mark(false))
	}
	return err
}

// storeTrip stores the answers of res, a round trip that Redis answered.
// It first renews the lease and marks Redis healthy. It records in s which
// items Redis got, and the first error of a script run or a bad key. It
// returns more false when send is to stop, with the error that stopped it.
// A lease that lapsed stops it without an error.
func (l *Tiered) storeTrip(s *sending, res tripResult, ttl time.Duration) (more bool, err error) {
	l.fails = 0
	if held, err := l.renewLease(); !held || err != nil {
		return false, err
	}
	if err := l.mark(true); err != nil {
		return false, err
	}
	if err := l.noteTime(res.replies); err != nil {
		return false, err
	}
	for r, run := range res.trip {
		if res.errs[r] != nil {
			if s.first == nil {
				s.first = res.errs[r]
			}
			continue
		}
		rep := res.replies[r]
		for j, it := range run {
			if held, err := l.storeAnswer(s, it, rep[4*j:4*j+4], ttl); err != nil || !held {
				if err != nil {
					err = fmt.Errorf("redistier: tiered %s: %w", it.key, err)
				}
				return false, err
			}
		}
	}
	return true, nil
}

// storeAnswer stores a, the script's answer for it. A key in a bad state
// is marked bad in the zone. A current key learns its reset marker, and
// the other hosts' count is stored. storeAnswer records in s that Redis
// got the key, unless its state is bad. It reports whether the lease is
// still held.
func (l *Tiered) storeAnswer(s *sending, it flushItem, a []int64, ttl time.Duration) (held bool, err error) {
	switch {
	case a[0] != 1:
		if s.first == nil {
			s.first = fmt.Errorf("%w: tiered %s: its Redis hash holds a state no flush writes", ErrBadState, l.redisKey(it))
		}
		return l.markBad(it)
	case it.prev:
		s.sent[it.pos] = true
		return true, nil
	default:
		s.sent[it.pos] = true
		if held, err = l.learn(it, a[3]); held && err == nil {
			held, err = l.fencedSet(it.others, dict.Int(a[1]), ttl)
		}
		return held, err
	}
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
