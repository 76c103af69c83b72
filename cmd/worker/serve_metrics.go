package main

// serve_metrics.go: a child's /metrics, in the Prometheus text format
// (version 0.0.4). Decisions are this child's, the global limit's too
// (-global-rate), and so are its per-client limiter's full-zone counts
// (limiter.Stats); zone figures are the zone's, summed over every process
// (dict.Stats, as internal/zonemetrics names them).

import (
	"bytes"
	"fmt"
	"net/http"
	"os"

	"github.com/shmzone/shmzone/internal/zonemetrics"
)

func (m *serveMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	m.write(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

func (m *serveMetrics) write(b *bytes.Buffer) {
	metric := func(name, typ, help string, v any) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n%s %v\n", name, help, name, typ, name, v)
	}
	fmt.Fprintf(b, "# HELP worker_serve_requests_total Requests this child decided, by result.\n# TYPE worker_serve_requests_total counter\n")
	fmt.Fprintf(b, "worker_serve_requests_total{result=\"allowed\"} %d\n", m.allowed.Load())
	fmt.Fprintf(b, "worker_serve_requests_total{result=\"rejected\"} %d\n", m.rejected.Load())
	fmt.Fprintf(b, "worker_serve_requests_total{result=\"error\"} %d\n", m.errors.Load())
	metric("worker_serve_requests_in_flight", "gauge", "Allowed requests in this child's handler, not yet answered.", m.inFlight.Load())
	metric("worker_serve_pid", "gauge", "This child's process id.", os.Getpid())
	if l := m.local; l != nil {
		st := l.Stats()
		metric("worker_serve_limiter_forcible_total", "counter", "Decisions and Uncommits of this child's per-client limiter whose write evicted live entries of other keys to make room (limiter.Stats.Forcible).", st.Forcible)
		metric("worker_serve_limiter_retries_total", "counter", "Write attempts of this child's per-client limiter repeated because the key's shard was still full after the zone's eviction rounds (limiter.Stats.Retries).", st.Retries)
		metric("worker_serve_limiter_evicted_total", "counter", "Decisions and Uncommits of this child's per-client limiter that found their key's state evicted while it still held, so the client started afresh (limiter.Stats.Evicted).", st.Evicted)
	}
	if g := m.global; g != nil {
		fmt.Fprintf(b, "# HELP worker_serve_global_requests_total Requests this child put to the global limit, by its decision (-redis-policy's included).\n# TYPE worker_serve_global_requests_total counter\n")
		fmt.Fprintf(b, "worker_serve_global_requests_total{result=\"allowed\"} %d\n", g.allowed.Load())
		fmt.Fprintf(b, "worker_serve_global_requests_total{result=\"rejected\"} %d\n", g.rejected.Load())
		st := g.t.Stats()
		metric("worker_serve_global_fallbacks_total", "counter", "Global decisions this child left to -redis-policy while Redis failed.", st.Fallbacks)
		metric("worker_serve_global_unlisted_total", "counter", "Keys this child could not list for the flushes of a window, the zone being full: decided on the host's count alone for that window.", st.Unlisted)
		metric("worker_serve_global_relisted_total", "counter", "Keys this child's flushes listed again after the zone evicted their window's list: out of the global count from the eviction to that flush.", st.Relisted)
		metric("worker_serve_global_flushes_total", "counter", "Flushes of the host's count this child made as the host's flusher.", g.flushes.Load())
		metric("worker_serve_redis_calls_total", "counter", "Script runs of this child's flushes.", st.Calls)
		metric("worker_serve_redis_errors_total", "counter", "Script runs of this child's flushes that failed.", st.Errors)
	}
	s := m.dict.Stats()
	for _, zm := range zonemetrics.All {
		metric(zm.Name, string(zm.Type), zm.Help, zm.Value(s))
	}
}
