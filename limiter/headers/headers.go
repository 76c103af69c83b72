package headers

import (
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

// Writer writes the rate limit headers of one policy. It is immutable and
// safe for concurrent use; the zero Writer is not usable, make one with New.
type Writer struct {
	quoted []byte // the policy name as an sf-string
	policy []byte // the RateLimit-Policy value, nil without a policy
	limit  []byte // the X-RateLimit-Limit value, nil without a policy
}

// New returns the Writer of the policy named name (printable ASCII; ""
// means "default"); p is the policy's limit and window, nil when unknown
// (then only the remaining quota and the reset go out). A policy without a
// window is a concurrency limit. New copies *p. It returns ErrBadName for a
// name with a byte outside printable ASCII.
func New(name string, p *limiter.Policy) (*Writer, error) {
	if name == "" {
		name = "default"
	}
	quoted, err := quoteName(name)
	if err != nil {
		return nil, err
	}
	w := &Writer{quoted: capped(quoted)}
	if p != nil {
		w.policy = capped(policyValue(quoted, *p))
		w.limit = capped(strconv.FormatInt(p.Limit, 10))
	}
	return w, nil
}

// Write sets the headers of decision d, reset being how long until the
// window resets, through set (an http.Header's Set, fasthttp's
// ResponseHeader.Set, fiber's Ctx.Set). RateLimit's t is the time until
// more quota: the reset, or d.RetryAfter on a rejection that has one. It is
// left out when that is 0. Write does not set Retry-After: a caller that
// rejects the request sets it to RetryAfterValue(d). Append writes the
// same headers without a string per value.
func (w *Writer) Write(d limiter.Decision, reset time.Duration, set func(key, value string)) {
	var fs Fields
	w.Append(&fs, d, reset)
	for i := range fs.Len() {
		f, v := fs.At(i)
		set(specNames[f], string(v))
	}
}

// RetryAfterValue returns a rejection's Retry-After value: whole seconds
// rounded up, at least 1 (a concurrency limit knows no retry time).
func RetryAfterValue(d limiter.Decision) string {
	return strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10)
}

// policyValue returns the RateLimit-Policy value of a policy named by the
// quoted name: `"default";q=100;w=60`, or, for a concurrency limit (no
// window), `"default";q=10;qu="concurrent-requests"`.
func policyValue(quoted string, p limiter.Policy) string {
	v := quoted + ";q=" + strconv.FormatInt(p.Limit, 10)
	if p.Window > 0 {
		return v + ";w=" + strconv.FormatInt(ceilSeconds(p.Window), 10)
	}
	return v + `;qu="concurrent-requests"`
}

// capped returns s as bytes, capped so that an append copies.
func capped(s string) []byte { return []byte(s)[:len(s):len(s)] }

// ceilSeconds rounds a duration up to whole seconds; 0 for d <= 0. It
// adds nothing to d, which may be the longest Duration (Req and GCRA
// saturate there): d + time.Second - 1 would wrap negative.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// quoteName returns a policy name as a Structured Fields string, or
// ErrBadName when it has characters an sf-string cannot hold.
func quoteName(name string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%w: %q is not printable ASCII", ErrBadName, name)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}
