package shmprom_test

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmzone/shmzone/internal/testutil"
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
	deadline := time.Now().Add(30 * time.Second)
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
			t.Fatalf("worker serve not answering after 30s: %v", err)
		}
	}
	mfs := scrape(t, "http://"+addr+"/metrics")
	for _, name := range []string{"worker_serve_requests_total", "shmzone_capacity_bytes", "shmzone_entries", "shmzone_writes_total"} {
		if mfs[name] == nil {
			t.Errorf("/metrics lacks %s; has %d families", name, len(mfs))
		}
	}
	if v, ok := value(mfs, "worker_serve_requests_total", map[string]string{"result": "allowed"}); !ok || v < 1 {
		t.Errorf("worker_serve_requests_total{result=\"allowed\"} = %v, %v; want at least the one request", v, ok)
	}
}
