package redistier

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/internal/testutil"
)

// luaRules is lua-resty-redis-ratelimit 0.03's algorithm as its Lua script
// computes it, written independently of reqScript and called as the Lua module
// calls its script: rate_m, burst_m, now_ms, duration_s. It stands in for an
// OpenResty node sharing the key space.
var luaRules = redis.NewScript(`
local rate, burst, now, duration = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local excess, last, forbidden = 0, 0, 0
local res = redis.call('GET', KEYS[1])
if res then
  local v = cjson.decode(res)
  if v and #v > 2 then excess, last, forbidden = v[1], v[2], v[3] end
  if forbidden == 1 then return {3, excess} end
  excess = math.max(excess - rate * math.abs(now - last) / 1000 + 1000, 0)
  if excess > burst then
    if duration > 0 then
      redis.call('SET', KEYS[1], cjson.encode({excess, now, 1}))
      redis.call('EXPIRE', KEYS[1], duration)
    end
    return {2, excess}
  end
end
redis.call('SET', KEYS[1], cjson.encode({excess, now, 0}))
redis.call('EXPIRE', KEYS[1], 60)
return {1, excess}
`)

// stored reads the JSON value under key.
func stored(t *testing.T, c redis.UniversalClient, key string) ([]float64, time.Duration) {
	t.Helper()
	raw, err := c.Get(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	var v []float64
	if err := json.Unmarshal([]byte(raw), &v); err != nil || len(v) != 3 {
		t.Fatalf("GET %s = %s, want a JSON array of 3 numbers (%v)", key, raw, err)
	}
	ttl, _ := c.PTTL(context.Background(), key).Result()
	return v, ttl
}

// newCompatReq returns a fresh server's client, a fake clock, and a Req of
// 2r/s and burst 10 under zone "zone" on that clock.
func newCompatReq(t *testing.T) (redis.UniversalClient, *testutil.Clock, *Req) {
	_, c := newClient(t)
	clk := new(testutil.Clock)
	l, err := NewReq(c, "zone", "2r/s", 10, 0, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	return c, clk, l
}

func TestCompatGoWritesLuaReads(t *testing.T) {
	c, clk, l := newCompatReq(t)
	ctx := context.Background()
	incoming(t, l, "a", true)
	incoming(t, l, "a", true)
	v, ttl := stored(t, c, "zone:a")
	if v[0] != 1000 || int64(v[1]) != t0.UnixMilli() || v[2] != 0 || ttl <= 59*time.Second || ttl > 60*time.Second {
		t.Fatalf("zone:a = %v ttl %v, want [1000 %d 0] (milli-requests, Unix ms, not forbidden) ttl 60s", v, t0.UnixMilli(), ttl)
	}
	// An OpenResty node 200 ms later: 1000 − 2000·0.2 + 1000 = 1600.
	r, err := luaRules.Run(ctx, c, []string{"zone:a"}, 2000, 10000, t0.UnixMilli()+200, 0).Int64Slice()
	if err != nil || fmt.Sprint(r) != "[1 1600]" {
		t.Fatalf("Lua rules on Go's state = %v, %v; want [1 1600]", r, err)
	}

	// A rejection with a duration: Go writes forbidden, Lua obeys it.
	f, err := NewReq(c, "zone", "2r/s", 0, 7*time.Second, fake(clk))
	if err != nil {
		t.Fatal(err)
	}
	incoming(t, f, "b", true)
	if d := incoming(t, f, "b", true); d.Allowed || d.RetryAfter != 7*time.Second {
		t.Fatalf("second call, burst 0: %+v, want rejected, RetryAfter 7s", d)
	}
	v, ttl = stored(t, c, "zone:b")
	if v[0] != 1000 || v[2] != 1 || ttl <= 6*time.Second || ttl > 7*time.Second {
		t.Fatalf("zone:b = %v ttl %v, want [1000 t0 1] ttl 7s", v, ttl)
	}
	r, err = luaRules.Run(ctx, c, []string{"zone:b"}, 2000, 0, t0.UnixMilli()+5000, 7).Int64Slice()
	if err != nil || r[0] != 3 {
		t.Fatalf("Lua rules on a forbidden key = %v, %v; want code 3", r, err)
	}
}

func TestCompatLuaWritesGoReads(t *testing.T) {
	c, clk, l := newCompatReq(t)
	ctx := context.Background()
	ms := t0.UnixMilli()
	tests := []struct {
		name, value string
		at          time.Duration
		allowed     bool
		state       float64
		delay       time.Duration
		retry       time.Duration
	}{
		// cjson writes fractional excess as it computed it.
		{"fractional", fmt.Sprintf("[1500.5,%d,0]", ms), 250 * time.Millisecond, true, 2, time.Second, 0},
		{"drained", fmt.Sprintf("[1000,%d,0]", ms), 10 * time.Second, true, 0, 0, 0},
		{"over burst", fmt.Sprintf("[10800,%d,0]", ms), 100 * time.Millisecond, false, 11.6, 0, 800 * time.Millisecond},
		{"forbidden", fmt.Sprintf("[12000,%d,1]", ms), time.Second, false, 12, 0, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Set(ctx, "zone:"+tt.name, tt.value, 5*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			clk.Set(tt.at)
			d := incoming(t, l, tt.name, true)
			if d.Allowed != tt.allowed || d.State != tt.state || d.Delay != tt.delay {
				t.Errorf("Incoming on %s at +%v = %+v, want allowed %v state %v delay %v", tt.value, tt.at, d, tt.allowed, tt.state, tt.delay)
			}
			if tt.retry > 0 && (d.RetryAfter > tt.retry || d.RetryAfter < tt.retry-time.Second) {
				t.Errorf("RetryAfter = %v, want about %v", d.RetryAfter, tt.retry)
			}
		})
	}
}
