package prefork

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Serve answers a request read before the drain began but not yet handed
// to the handler. net/http marks the connection active, then drops the
// request if Shutdown has begun. The test stalls the connection between
// the two until Serve either waits for it or shuts down.
func TestServeAnswersRequestReadBeforeDrain(t *testing.T) {
	ln := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stalled := make(chan struct{})
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	testHookFreshWait = func(int) { free() }
	t.Cleanup(func() { testHookFreshWait = nil })
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }),
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateActive {
				close(stalled)
				<-release
			}
		},
	}
	srv.RegisterOnShutdown(free)
	ran := make(chan error, 1)
	go func() { ran <- Serve(ctx, srv, ln, hang) }()
	done := getAsync(ln.Addr().String(), "/")
	<-stalled
	cancel()
	if a := <-done; a.err != nil || a.body != "ok" {
		t.Errorf("request read before the drain: %q, %v; want %q", a.body, a.err, "ok")
	}
	if err := <-ran; err != nil {
		t.Fatalf("Serve = %v, want nil after a full drain", err)
	}
}
