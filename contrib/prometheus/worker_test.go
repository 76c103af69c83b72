package shmprom_test

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/internal/zonemetrics"
)

// `worker serve`'s /metrics, written by hand in the core module, parses
// with expfmt: the worker is built from this repository, started with one
// child over a temporary zone, sent a request, and scraped.
func TestWorkerServeMetricsParse(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "worker")
	build := exec.Command("go", "build", "-o", bin, "./cmd/worker")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/worker: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "-procs", "1", "-addr", addr, "-zone", filepath.Join(dir, "serve.zone"), "-rate", "100r/s", "-nodelay")
	exited := testutil.StartGroup(t, cmd)
	// The child listens when it is ready; until then connections fail.
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("worker serve exited: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker serve not answering after a minute: %v", err)
		}
	}
	mfs := scrape(t, "http://"+addr+"/metrics")
	if mfs["worker_serve_requests_total"] == nil {
		t.Errorf("/metrics lacks worker_serve_requests_total; has %d families", len(mfs))
	}
	// Every figure of the zone's Stats, of its type, as the collector
	// exports them.
	for _, m := range zonemetrics.All {
		typ := dto.MetricType_GAUGE
		if m.Type == zonemetrics.Counter {
			typ = dto.MetricType_COUNTER
		}
		if mf := mfs[m.Name]; mf == nil || mf.GetType() != typ {
			t.Errorf("/metrics has %s as %v, want a %v", m.Name, mf, typ)
		}
	}
	if v, ok := value(mfs, "shmzone_writes_total", nil); !ok || v < 1 {
		t.Errorf("shmzone_writes_total = %v, %v; want at least the request's write", v, ok)
	}
	if v, ok := value(mfs, "worker_serve_requests_total", map[string]string{"result": "allowed"}); !ok || v < 1 {
		t.Errorf("worker_serve_requests_total{result=\"allowed\"} = %v, %v; want at least the one request", v, ok)
	}
}
