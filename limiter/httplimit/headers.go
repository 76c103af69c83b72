package httplimit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// The response headers. RateLimit-Policy and RateLimit follow
// draft-ietf-httpapi-ratelimit-headers (the Structured Fields syntax of -08
// and later: a policy item with q, w or qu, and a limit item with r and t);
// X-RateLimit-* are the common older headers, their reset in delta seconds.
const (
	hdrPolicy     = "RateLimit-Policy"
	hdrRateLimit  = "RateLimit"
	hdrLimit      = "X-RateLimit-Limit"
	hdrRemaining  = "X-RateLimit-Remaining"
	hdrReset      = "X-RateLimit-Reset"
	hdrRetryAfter = "Retry-After"
)

// policyHeader returns the RateLimit-Policy value of a policy named by the
// quoted name: `"default";q=100;w=60`, or, for a concurrency limit (no
// window), `"default";q=10;qu="concurrent-requests"`.
func policyHeader(quoted string, p limiter.Policy) string {
	v := quoted + ";q=" + strconv.FormatInt(p.Limit, 10)
	if p.Window > 0 {
		return v + ";w=" + strconv.FormatInt(ceilSeconds(p.Window), 10)
	}
	return v + `;qu="concurrent-requests"`
}

// setHeaders writes the rate limit headers of a decision. policy is nil
// when no policy is known: then only the remaining quota and the reset go
// out.
func setHeaders(h http.Header, quoted string, policy *limiter.Policy, d limiter.Decision, reset time.Duration) {
	rl := quoted + ";r=" + strconv.FormatInt(d.Remaining, 10)
	next := reset // until more quota: the reset, or the retry when rejected
	if !d.Allowed && d.RetryAfter > 0 {
		next = d.RetryAfter
	}
	if next > 0 {
		rl += ";t=" + strconv.FormatInt(ceilSeconds(next), 10)
	}
	if policy != nil {
		h.Set(hdrPolicy, policyHeader(quoted, *policy))
		h.Set(hdrLimit, strconv.FormatInt(policy.Limit, 10))
	}
	h.Set(hdrRateLimit, rl)
	h.Set(hdrRemaining, strconv.FormatInt(d.Remaining, 10))
	h.Set(hdrReset, strconv.FormatInt(ceilSeconds(reset), 10))
}

// retryAfter returns the Retry-After value of a rejection: whole seconds,
// rounded up, at least 1 (a Conn knows no retry time).
func retryAfter(d limiter.Decision) string {
	return strconv.FormatInt(max(ceilSeconds(d.RetryAfter), 1), 10)
}

// ceilSeconds rounds a duration up to whole seconds; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// quoteName returns a policy name as a Structured Fields string, or an
// error when it has characters an sf-string cannot hold.
func quoteName(name string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%w: name %q is not printable ASCII", ErrBadPolicy, name)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}
