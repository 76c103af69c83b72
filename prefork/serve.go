package prefork

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve serves srv on ln until ctx ends, then drains: it stops accepting
// (connections still queued on a prefork socket wait for the slot's other
// children or its next child), lets each connection accepted but not yet
// read bring in its first request, and shuts srv down, waiting up to drain
// for the requests in flight. It returns nil after a full drain, the error
// of srv.Serve if serving fails first, or an error wrapping
// context.DeadlineExceeded when requests were still in flight after drain.
// Serve sets srv.ConnState, calling the one srv had.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, drain time.Duration) error {
	fresh := &freshConns{conns: map[net.Conn]bool{}, next: srv.ConnState}
	srv.ConnState = fresh.track
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Stop accepting first: the master keeps the socket, so what is queued
	// waits for the other children. Shutdown would drop the first request
	// of a connection accepted but not yet read, so give those connections
	// their request before shutting down.
	ln.Close()
	<-served // the error of an Accept on the closed listener
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	fresh.wait(dctx, min(drain, time.Second))
	if err := srv.Shutdown(dctx); err != nil {
		return fmt.Errorf("prefork: drain: %w", err)
	}
	return nil
}

// ServeFunc serves ln with serve until ctx ends, then drains with
// shutdown. It is Serve for any server that serves a net.Listener. For a
// *fasthttp.Server they are srv.Serve and srv.ShutdownWithContext. For a
// fiber app they are a call of app.Listener and app.ShutdownWithContext.
//
// serve is called once, in a goroutine of its own, and must return once ln
// is closed. When ctx ends, ServeFunc calls shutdown with a context that
// ends drain later. shutdown should close ln and wait for the requests in
// flight until its context ends. ServeFunc then closes ln, which may
// already be closed, and waits for serve to return. Connections still
// queued on a prefork socket wait for the slot's other children or its
// next child.
//
// ServeFunc returns nil after a full drain, and the error of serve if
// serving fails first. When shutdown fails, it returns an error wrapping
// shutdown's: context.DeadlineExceeded when requests were still in flight
// after drain.
func ServeFunc(ctx context.Context, ln net.Listener, serve func(net.Listener) error, shutdown func(context.Context) error, drain time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	err := shutdown(dctx)
	// A shutdown that ran before serve took ln leaves it open.
	ln.Close()
	<-served // the error of an Accept on the closed listener
	if err != nil {
		return fmt.Errorf("prefork: drain: %w", err)
	}
	return nil
}

// freshConns tracks the connections accepted whose first request has not
// been read (http.StateNew).
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
	next  func(net.Conn, http.ConnState) // the server's own, or nil
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	if st == http.StateNew {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
	f.mu.Unlock()
	if f.next != nil {
		f.next(c, st)
	}
}

// wait returns once no connection is fresh, after max, or when ctx ends.
func (f *freshConns) wait(ctx context.Context, max time.Duration) {
	end := time.Now().Add(max)
	for time.Now().Before(end) && ctx.Err() == nil {
		f.mu.Lock()
		n := len(f.conns)
		f.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
