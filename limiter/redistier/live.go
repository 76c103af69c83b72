package redistier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter"
)

// Live numbers in Redis (limiter/DESIGN.md, section 12). A limiter's live
// numbers are a hash "prefix|limits|kind", with a field per number in the
// script's units, "by" and "at". The decision script reads the hash as its
// KEYS[2] when it shares the state key's slot: on a *redis.Client, or when
// the prefix holds a hash tag. Otherwise the limiter reads the hash every
// Options.LiveEvery and sends its fields as the script's last arguments.
// Either way the script checks them with the kind's liveNums.

// DefaultLiveEvery is how often a limiter reads its live numbers when its
// script cannot, if Options.LiveEvery is 0 or less.
const DefaultLiveEvery = time.Second

// liveKind is what a kind of limiter keeps live: its fields, in the
// script's units and order, and the Lua that checks them.
type liveKind struct {
	name   string
	fields []string
	// nums defines liveNums(v, d, tag): the numbers in force, v's live
	// strings over the built numbers d, checked. It raises "tag field: ..."
	// for numbers the kind's constructor refuses.
	nums string
	// numbers turns the numbers in force, in script units, into
	// limiter.Numbers.
	numbers func(x []float64) limiter.Numbers
}

// script returns the Lua that defines liveFields, luaLive and liveNums.
func (k *liveKind) script() string {
	return "local liveFields = {'" + strings.Join(k.fields, "', '") + "'}\n" + luaLive + k.nums
}

// luaLive reads and checks live numbers. liveRead returns the live
// strings, false where unset: from the hash key, or from the ARGV that
// start at first when key is nil.
const luaLive = `
local function liveErr(tag, name, what)
  error({err = tag .. ' ' .. name .. ': ' .. what})
end
local function liveNum(tag, name, s, dflt, lo, hi, int)
  local x = dflt
  if s then x = tonumber(s) end
  if x == nil or x ~= x or x < lo or x > hi or (int and x ~= math.floor(x)) then
    local got = s and string.format('%q', string.sub(s, 1, 64)) or string.format('%.17g', dflt)
    liveErr(tag, name, got .. ' is not ' .. (int and 'an integer' or 'a number') ..
      string.format(' from %.17g to %.17g', lo, hi))
  end
  return x
end
local function liveRead(key, first)
  local v
  if key then
    v = redis.pcall('HMGET', key, unpack(liveFields))
    if v.err then liveErr('BADLIVE', 'hash', key .. ' is not a hash') end
  else
    v = {}
    for i = 1, #liveFields do
      local s = ARGV[first + i - 1]
      if s == nil or s == '' then v[i] = false else v[i] = s end
    end
  end
  return v
end
`

// setLiveBody writes live numbers after checking them over the numbers
// in force. KEYS[1] the live hash; ARGV k, m, then k field names, m built
// numbers, k new values ("" keeps the field), by, at. A hash that the
// kind refuses already is BADLIVE; new numbers it refuses are BADNUM.
const setLiveBody = `
local k, m = tonumber(ARGV[1]), tonumber(ARGV[2])
local d, new = {}, {}
for i = 1, m do d[i] = tonumber(ARGV[2 + k + i]) end
for i = 1, k do new[i] = ARGV[2 + k + m + i] end
local cur = liveRead(KEYS[1], 0)
liveNums(cur, d, 'BADLIVE')
local v, hs = {}, {}
for i = 1, k do
  if new[i] ~= '' then
    v[i] = new[i]
    table.insert(hs, liveFields[i])
    table.insert(hs, new[i])
  else
    v[i] = cur[i]
  end
end
liveNums(v, d, 'BADNUM')
table.insert(hs, 'by')
table.insert(hs, ARGV[3 + 2 * k + m])
table.insert(hs, 'at')
table.insert(hs, ARGV[4 + 2 * k + m])
redis.call('HSET', KEYS[1], unpack(hs))
return 1
`

// showLiveBody returns the numbers in force as strings, then each live
// field's raw value ("" where unset), by and at. KEYS[1] the live hash;
// ARGV the built numbers.
const showLiveBody = `
local d = {}
for i = 1, #ARGV do d[i] = tonumber(ARGV[i]) end
local cur = liveRead(KEYS[1], 0)
local x = liveNums(cur, d, 'BADLIVE')
local out = {}
for i = 1, #x do out[i] = string.format('%.17g', x[i]) end
for i = 1, #liveFields do out[#x + i] = cur[i] or '' end
local meta = redis.call('HMGET', KEYS[1], 'by', 'at')
table.insert(out, meta[1] or '')
table.insert(out, meta[2] or '')
return out
`

// live is a limiter's side of its live numbers.
type live struct {
	kind   *liveKind
	lkey   string   // the live hash
	inline bool     // the script reads lkey as KEYS[2]
	built  []string // the built numbers, in script units
	set    *redis.Script
	show   *redis.Script
	cache  atomicCache
}

// initLive sets the limiter's kind and built numbers, in script units.
func (b *base) initLive(k *liveKind, built ...any) {
	l := &b.live
	l.kind = k
	l.lkey = b.prefix + "|limits|" + k.name
	l.inline = hashTag(b.prefix) != ""
	if _, ok := b.c.(*redis.Client); ok {
		l.inline = true
	}
	for _, x := range built {
		l.built = append(l.built, fmt.Sprint(x))
	}
	l.set = redis.NewScript(k.script() + setLiveBody)
	l.show = redis.NewScript(k.script() + showLiveBody)
	if b.o.LiveEvery <= 0 {
		b.o.LiveEvery = DefaultLiveEvery
	}
}

// liveFieldsOf returns the names of the live fields.
func (b *base) liveFieldsOf() []string { return b.live.kind.fields }

// hashTag returns the hash tag of a Redis key, as Redis Cluster finds it:
// what lies between the first "{" and the first "}" after it, if not empty.
func hashTag(s string) string {
	i := strings.IndexByte(s, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(s[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return s[i+1 : i+1+j]
}

// scriptKeys returns the script's keys for key, and its arguments with
// the live strings appended when the script cannot read the hash.
func (b *base) scriptKeys(ctx context.Context, key string, args []any) ([]string, []any, error) {
	l := &b.live
	switch {
	case l.kind == nil:
		return []string{b.key(key)}, args, nil
	case l.inline:
		return []string{b.key(key), l.lkey}, args, nil
	}
	v, err := b.cached(ctx)
	if err != nil {
		return nil, nil, err
	}
	return []string{b.key(key)}, append(args, v...), nil
}

// setLive checks and stores live numbers: vals holds a string in script
// units per field of the kind, "" to keep the field.
func (b *base) setLive(ctx context.Context, vals ...string) error {
	l := &b.live
	args := []any{len(l.kind.fields), len(l.built)}
	for _, f := range l.kind.fields {
		args = append(args, f)
	}
	for _, x := range l.built {
		args = append(args, x)
	}
	for _, v := range vals {
		args = append(args, v)
	}
	host, _ := os.Hostname()
	args = append(args, fmt.Sprintf("%s:%d", host, os.Getpid()), b.o.Now().UnixMilli())
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	err := l.set.Run(ctx, b.c, []string{l.lkey}, args...).Err()
	b.live.cache.drop()
	return liveErr(l.lkey, err, true)
}

// unsetLive deletes the live hash.
func (b *base) unsetLive(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	err := b.c.Del(ctx, b.live.lkey).Err()
	b.live.cache.drop()
	return liveErr(b.live.lkey, err, false)
}

// liveErr wraps the error of a call on the live hash lk. A setter's BADNUM
// is the constructor's error for the field, with set true.
func liveErr(lk string, err error, set bool) error {
	if err == nil {
		return nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		if rest, ok := strings.CutPrefix(msg, "BADNUM "); ok && set {
			rest, _, _ = strings.Cut(rest, " script: ")
			return fmt.Errorf("%w: %s", fieldErr(rest), rest)
		}
		if strings.HasPrefix(msg, "BADLIVE ") {
			return fmt.Errorf("%w: %s: %w", ErrBadLive, lk, err)
		}
		if isScriptErr(err) {
			return fmt.Errorf("%w: %s: %w", ErrScript, lk, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, lk, err)
}

// fieldErr returns the constructors' error for a refused field, named at
// the start of msg.
func fieldErr(msg string) error {
	switch {
	case strings.HasPrefix(msg, "rate"), strings.HasPrefix(msg, "interval"):
		return limiter.ErrBadRate
	case strings.HasPrefix(msg, "burst"):
		return limiter.ErrBadBurst
	case strings.HasPrefix(msg, "window"):
		return limiter.ErrBadWindow
	}
	return limiter.ErrBadLimit
}

// Setting is a Redis limiter's numbers, as Redis and its construction
// hold them.
type Setting struct {
	// InForce is the numbers a decision uses: Live's fields over Built.
	InForce limiter.Numbers
	// Built is this limiter's construction's numbers.
	Built limiter.Numbers
	// LiveFields says which numbers are live.
	LiveFields limiter.Fields
	// LiveBy is the host and pid that set the live numbers last.
	LiveBy string
	// LiveAt is when, on the setter's clock. It is zero with no live numbers.
	LiveAt time.Time
}

// setting reads the live hash and returns the numbers in force.
func (b *base) setting(ctx context.Context) (Setting, error) {
	l := &b.live
	args := make([]any, len(l.built))
	for i, x := range l.built {
		args[i] = x
	}
	tctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	r, err := l.show.Run(tctx, b.c, []string{l.lkey}, args...).StringSlice()
	if err != nil {
		return Setting{}, liveErr(l.lkey, err, false)
	}
	nb, nf := len(l.built), len(l.kind.fields)
	if len(r) != nb+nf+2 {
		return Setting{}, fmt.Errorf("%w: %s: a reply of %d strings", ErrBadLive, l.lkey, len(r))
	}
	var s Setting
	x, d := make([]float64, nb), make([]float64, nb)
	for i := range x {
		x[i], _ = strconv.ParseFloat(r[i], 64)
		d[i], _ = strconv.ParseFloat(l.built[i], 64)
	}
	s.InForce, s.Built = l.kind.numbers(x), l.kind.numbers(d)
	for i, f := range l.kind.fields {
		if r[nb+i] != "" {
			s.LiveFields |= fieldOf(f)
		}
	}
	s.LiveBy = r[nb+nf]
	if ms, err := strconv.ParseInt(r[nb+nf+1], 10, 64); err == nil {
		s.LiveAt = time.UnixMilli(ms)
	}
	return s, nil
}

// fieldOf returns the limiter.Fields bit of a live field.
func fieldOf(f string) limiter.Fields {
	switch f {
	case "rate", "interval":
		return limiter.FieldRate
	case "burst":
		return limiter.FieldBurst
	case "window":
		return limiter.FieldWindow
	}
	return limiter.FieldLimit
}

// maxExactF is maxExact as a float64, the largest live integer.
const maxExactF = float64(maxExact)

// checkInt returns err for x below 1 or above 2^53.
func checkInt(x int64, err error) error {
	if x < 1 || x > maxExact {
		return fmt.Errorf("%w: %d", err, x)
	}
	return nil
}
