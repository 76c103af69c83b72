// Package headers is limiter/headers of the core module, as its API is
// fixed, until that package is released: the rate limit headers of one
// policy, framework-neutral.
package headers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// Header names.
const (
	Policy     = "RateLimit-Policy"
	RateLimit  = "RateLimit"
	Limit      = "X-RateLimit-Limit"
	Remaining  = "X-RateLimit-Remaining"
	Reset      = "X-RateLimit-Reset"
	RetryAfter = "Retry-After"
)

// ErrBadName is returned by New for a policy name an sf-string cannot hold.
var ErrBadName = errors.New("headers: bad policy name")

// Writer writes the rate limit headers of one policy.
type Writer struct {
	quoted string
	policy *limiter.Policy
}

// New returns the Writer of the policy named name ("" means "default");
// p is nil when unknown.
func New(name string, p *limiter.Policy) (*Writer, error) {
	if name == "" {
		name = "default"
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c > 0x7e {
			return nil, fmt.Errorf("%w: %q is not printable ASCII", ErrBadName, name)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	w := &Writer{quoted: b.String()}
	if p != nil {
		q := *p
		w.policy = &q
	}
	return w, nil
}

// Write sets the headers of decision d through set.
func (w *Writer) Write(d limiter.Decision, reset time.Duration, set func(key, value string)) {
	rl := w.quoted + ";r=" + strconv.FormatInt(d.Remaining, 10)
	next := reset
	if !d.Allowed && d.RetryAfter > 0 {
		next = d.RetryAfter
	}
	if next > 0 {
		rl += ";t=" + strconv.FormatInt(ceilSeconds(next), 10)
	}
	if p := w.policy; p != nil {
		v := w.quoted + ";q=" + strconv.FormatInt(p.Limit, 10)
		if p.Window > 0 {
			v += ";w=" + strconv.FormatInt(ceilSeconds(p.Window), 10)
		} else {
			v += `;qu="concurrent-requests"`
		}
		set(Policy, v)
		set(Limit, strconv.FormatInt(p.Limit, 10))
	}
	set(RateLimit, rl)
	set(Remaining, strconv.FormatInt(d.Remaining, 10))
	set(Reset, strconv.FormatInt(ceilSeconds(reset), 10))
}

// RetryAfterValue returns a rejection's Retry-After value: whole seconds
// rounded up, at least 1.
func RetryAfterValue(d limiter.Decision) string {
	return strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10)
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
