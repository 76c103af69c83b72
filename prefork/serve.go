package prefork

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Serve serves srv on ln until ctx ends, then drains. To drain, it first
// stops accepting. Connections still queued on a prefork socket wait for
// the slot's other children or its next child. It lets each connection
// accepted bring its first request to srv's handler. Then it shuts srv
// down, waiting up to drain for the requests in flight. Serve sets
// srv.ConnState, srv.ConnContext and srv.Handler, each calling the one srv
// had.
//
// Serve returns nil after a full drain. It returns the error of srv.Serve
// if serving fails first. It returns an error wrapping
// context.DeadlineExceeded when requests were still in flight after
// drain.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, drain time.Duration) error {
	fresh := &freshConns{conns: map[net.Conn]bool{}, next: srv.ConnState}
	srv.ConnState = fresh.track
	srv.ConnContext = fresh.connContext(srv.ConnContext)
	srv.Handler = fresh.handler(srv.Handler)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Stop accepting first: the master keeps the socket, so what is queued
	// waits for the other children. Shutdown drops a request read but not
	// yet handed to the handler: net/http checks for shutdown between the
	// two. So let each accepted connection reach the handler first.
	ln.Close()
	<-served // the error of an Accept on the closed listener
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	fresh.wait(dctx, freshWait)
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
// serve is called once, in a goroutine of its own. It must return once ln
// is closed. When ctx ends, ServeFunc calls shutdown with a context that
// ends drain later. shutdown should close ln. It should wait for the
// requests in flight until its context ends. ServeFunc then closes ln,
// which may already be closed. It waits for serve to return. Connections
// still queued on a prefork socket wait for the slot's next child.
//
// ServeFunc returns nil after a full drain. It returns the error of serve
// if serving fails first. When shutdown fails, it returns an error
// wrapping shutdown's. That is context.DeadlineExceeded when requests were
// still in flight after drain.
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
// reached the handler. A connection leaves the set when its first request
// enters the handler, or when it closes or is hijacked. StateActive is too
// early: net/http sets it before its last check for shutdown.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]bool
	next  func(net.Conn, http.ConnState) // the server's own, or nil
}

// freshWait bounds the wait for fresh connections. Shutdown itself waits
// about as long for a connection that has not sent its first request:
// net/http counts one as idle only after 5 seconds. So waiting as long adds
// little to a drain, and gives a slow client the time to be answered.
const freshWait = 5 * time.Second

// freshConnKey is the context key under which a request's freshConn is.
type freshConnKey struct{}

// freshConn is a connection, and whether its first request reached the
// handler.
type freshConn struct {
	c       net.Conn
	reached atomic.Bool
}

// connContext returns a ConnContext that puts the connection in its
// context, after next, the server's own (or nil).
func (f *freshConns) connContext(next func(context.Context, net.Conn) context.Context) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		return context.WithValue(ctx, freshConnKey{}, &freshConn{c: c})
	}
}

// handler returns h, or http.DefaultServeMux if h is nil, that first takes
// the request's connection out of the set. Only a connection's first
// request takes the set's lock.
func (f *freshConns) handler(h http.Handler) http.Handler {
	if h == nil {
		h = http.DefaultServeMux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fc, ok := r.Context().Value(freshConnKey{}).(*freshConn); ok && !fc.reached.Load() {
			fc.reached.Store(true)
			f.remove(fc.c)
		}
		h.ServeHTTP(w, r)
	})
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		f.mu.Lock()
		f.conns[c] = true
		f.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		f.remove(c)
	}
	if f.next != nil {
		f.next(c, st)
	}
}

func (f *freshConns) remove(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// testHookFreshWait, if set, is called by wait each time it finds n
// connections fresh, n > 0.
var testHookFreshWait func(n int)

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
		if testHookFreshWait != nil {
			testHookFreshWait(n)
		}
		time.Sleep(time.Millisecond)
	}
}
