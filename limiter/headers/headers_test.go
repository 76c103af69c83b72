package headers

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// all is every header a Writer or a rejection may set.
var all = []string{Policy, RateLimit, Limit, Remaining, Reset, RetryAfter}

func TestWrite(t *testing.T) {
	minute := &limiter.Policy{Limit: 2, Window: time.Minute}
	tests := []struct {
		name   string
		policy string
		p      *limiter.Policy
		d      limiter.Decision
		reset  time.Duration
		want   map[string]string
	}{
		{"count/allowed", "", minute, limiter.Decision{Allowed: true, Remaining: 1}, time.Minute, map[string]string{
			Policy: `"default";q=2;w=60`, RateLimit: `"default";r=1;t=60`, Limit: "2", Remaining: "1", Reset: "60"}},
		{"count/reset rounded up", "", minute, limiter.Decision{Allowed: true}, 39*time.Second + time.Millisecond, map[string]string{
			Policy: `"default";q=2;w=60`, RateLimit: `"default";r=0;t=40`, Limit: "2", Remaining: "0", Reset: "40"}},
		{"count/rejected", "", minute, limiter.Decision{RetryAfter: 39500 * time.Millisecond}, 39500 * time.Millisecond, map[string]string{
			Policy: `"default";q=2;w=60`, RateLimit: `"default";r=0;t=40`, Limit: "2", Remaining: "0", Reset: "40"}},
		{"req/no reset", "per-ip", &limiter.Policy{Limit: 2, Window: 2 * time.Second}, limiter.Decision{Allowed: true, Remaining: 1}, 0, map[string]string{
			Policy: `"per-ip";q=2;w=2`, RateLimit: `"per-ip";r=1`, Limit: "2", Remaining: "1", Reset: "0"}},
		{"req/rejected: t is the retry, not the reset", "per-ip", &limiter.Policy{Limit: 2, Window: 2 * time.Second}, limiter.Decision{RetryAfter: 500 * time.Millisecond}, 0, map[string]string{
			Policy: `"per-ip";q=2;w=2`, RateLimit: `"per-ip";r=0;t=1`, Limit: "2", Remaining: "0", Reset: "0"}},
		{"window rounded up", "", &limiter.Policy{Limit: 60, Window: 1500 * time.Millisecond}, limiter.Decision{Allowed: true, Remaining: 59}, 0, map[string]string{
			Policy: `"default";q=60;w=2`, RateLimit: `"default";r=59`, Limit: "60", Remaining: "59", Reset: "0"}},
		{"conn", "", &limiter.Policy{Limit: 4}, limiter.Decision{Allowed: true, Remaining: 3}, 0, map[string]string{
			Policy: `"default";q=4;qu="concurrent-requests"`, RateLimit: `"default";r=3`, Limit: "4", Remaining: "3", Reset: "0"}},
		{"no policy", "api", nil, limiter.Decision{Allowed: true, Remaining: 7}, 3 * time.Second, map[string]string{
			RateLimit: `"api";r=7;t=3`, Remaining: "7", Reset: "3"}},
		{"saturated durations", "", &limiter.Policy{Limit: 1, Window: math.MaxInt64}, limiter.Decision{RetryAfter: math.MaxInt64}, math.MaxInt64, map[string]string{
			Policy: `"default";q=1;w=9223372037`, RateLimit: `"default";r=0;t=9223372037`, Limit: "1", Remaining: "0", Reset: "9223372037"}},
		{"quoted name", `a "b" \c`, nil, limiter.Decision{Allowed: true, Remaining: 1}, 0, map[string]string{
			RateLimit: `"a \"b\" \\c";r=1`, Remaining: "1", Reset: "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.policy, tt.p)
			if err != nil {
				t.Fatalf("New(%q, %v): %v", tt.policy, tt.p, err)
			}
			t.Run("http.Header", func(t *testing.T) {
				h := http.Header{}
				w.Write(tt.d, tt.reset, h.Set)
				for _, k := range all {
					if got, want := h.Get(k), tt.want[k]; got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				if len(h) != len(tt.want) {
					t.Errorf("headers %v, want exactly %v", h, tt.want)
				}
			})
			t.Run("map", func(t *testing.T) {
				got := map[string]string{}
				calls := 0
				w.Write(tt.d, tt.reset, func(k, v string) { calls++; got[k] = v })
				if !maps.Equal(got, tt.want) {
					t.Errorf("set\n got %v\nwant %v", got, tt.want)
				}
				if calls != len(tt.want) {
					t.Errorf("set called %d times, want once per header (%d)", calls, len(tt.want))
				}
			})
		})
	}
}

// TestNewCopiesPolicy: a Writer's headers do not follow later changes to
// the Policy it was made from.
func TestNewCopiesPolicy(t *testing.T) {
	p := &limiter.Policy{Limit: 5, Window: time.Second}
	w, err := New("", p)
	if err != nil {
		t.Fatal(err)
	}
	p.Limit = 9
	h := http.Header{}
	w.Write(limiter.Decision{Allowed: true}, 0, h.Set)
	if got := h.Get(Limit); got != "5" {
		t.Errorf("%s = %q after the caller changed its Policy, want 5", Limit, got)
	}
}

func TestNewBadName(t *testing.T) {
	for _, name := range []string{"a\nb", "día", "tab\there", "\x7f"} {
		if w, err := New(name, nil); !errors.Is(err, ErrBadName) || w != nil {
			t.Errorf("New(%q) = %v, %v; want nil, ErrBadName", name, w, err)
		}
	}
	for _, name := range []string{" ", "~", `"`, `\`, "per-ip"} {
		if _, err := New(name, nil); err != nil {
			t.Errorf("New(%q) = %v, want no error: printable ASCII", name, err)
		}
	}
}

func TestRetryAfterValue(t *testing.T) {
	tests := []struct {
		retry time.Duration
		want  string
	}{
		{0, "1"}, // a Conn knows no retry time
		{-time.Second, "1"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{time.Second + time.Nanosecond, "2"},
		{40 * time.Second, "40"},
		{39500 * time.Millisecond, "40"},
		{math.MaxInt64, "9223372037"}, // Req and GCRA saturate there
		{math.MaxInt64 - 854775807, "9223372036"},
	}
	for _, tt := range tests {
		if got := RetryAfterValue(limiter.Decision{RetryAfter: tt.retry}); got != tt.want {
			t.Errorf("RetryAfterValue(RetryAfter %v) = %q, want %q", tt.retry, got, tt.want)
		}
	}
}

// TestAppendLongName: a policy name too long for the Fields' own buffer
// moves the values to a slice of their own, whole, and Reset keeps it for
// the next decision.
func TestAppendLongName(t *testing.T) {
	name := strings.Repeat("n", 200)
	w, err := New(name, &limiter.Policy{Limit: 5, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var fs Fields
	for round := range 2 {
		fs.Reset()
		d := limiter.Decision{Remaining: int64(round), RetryAfter: time.Second}
		w.Append(&fs, d, 30*time.Second)
		fs.AppendRetryAfter(d)
		got := map[string]string{}
		for i := range fs.Len() {
			f, v := fs.At(i)
			got[f.Name()] = string(v)
		}
		want := map[string]string{
			"Ratelimit-Policy":      `"` + name + `";q=5;w=60`,
			"X-Ratelimit-Limit":     "5",
			"Ratelimit":             fmt.Sprintf(`"%s";r=%d;t=1`, name, round),
			"X-Ratelimit-Remaining": fmt.Sprint(round),
			"X-Ratelimit-Reset":     "30",
			"Retry-After":           "1",
		}
		if !maps.Equal(got, want) {
			t.Errorf("round %d:\n got %v\nwant %v", round, got, want)
		}
	}
}
