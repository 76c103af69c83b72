package prefork

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// loopback returns a listener on a free loopback port, closed when the test
// ends.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// ServeFunc drains when its context ends: a request in flight then is
// answered in full before ServeFunc returns nil, and the listener is
// closed.
func TestServeFuncDrains(t *testing.T) {
	ln := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inFlight := make(chan struct{})
	var answered atomic.Bool
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-ctx.Done()
		fmt.Fprint(w, "drained")
		answered.Store(true)
	})}
	ran := make(chan error, 1)
	go func() { ran <- ServeFunc(ctx, ln, srv.Serve, srv.Shutdown, hang) }()
	done := getAsync(ln.Addr().String(), "/")
	<-inFlight
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("ServeFunc = %v, want nil after a full drain", err)
	}
	if !answered.Load() {
		t.Fatal("ServeFunc returned before the request in flight was answered")
	}
	if a := <-done; a.err != nil || a.body != "drained" {
		t.Fatalf("request in flight: %q, %v; want %q", a.body, a.err, "drained")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after ServeFunc returned: %v, want net.ErrClosed", err)
	}
}

// ServeFunc returns the error of serve when serving fails before the
// context ends, without calling shutdown.
func TestServeFuncServeFails(t *testing.T) {
	ln := loopback(t)
	boom := errors.New("boom")
	shutdown := func(context.Context) error { t.Error("shutdown called"); return nil }
	err := ServeFunc(context.Background(), ln, func(net.Listener) error { return boom }, shutdown, hang)
	if !errors.Is(err, boom) {
		t.Fatalf("ServeFunc = %v, want the error of serve", err)
	}
}

// A request still in flight when the drain time is over makes ServeFunc
// return an error wrapping context.DeadlineExceeded.
func TestServeFuncDrainTimeout(t *testing.T) {
	ln := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inFlight, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-release
	})}
	ran := make(chan error, 1)
	go func() { ran <- ServeFunc(ctx, ln, srv.Serve, srv.Shutdown, drainShort) }()
	getAsync(ln.Addr().String(), "/")
	<-inFlight
	cancel()
	if err := <-ran; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ServeFunc = %v, want an error wrapping context.DeadlineExceeded", err)
	}
}

// drainShort is TestServeFuncDrainTimeout's drain time. Its request is
// held until the test ends, so any drain time runs out.
const drainShort = time.Millisecond

// A shutdown that leaves the listener open does not keep serve running:
// ServeFunc closes the listener and returns once serve has.
func TestServeFuncClosesListener(t *testing.T) {
	ln := loopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	serve := func(ln net.Listener) error {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			c.Close()
		}
	}
	cancel()
	if err := ServeFunc(ctx, ln, serve, func(context.Context) error { return nil }, hang); err != nil {
		t.Fatalf("ServeFunc = %v, want nil", err)
	}
	select {
	case <-served:
	default:
		t.Fatal("ServeFunc returned before serve")
	}
}
