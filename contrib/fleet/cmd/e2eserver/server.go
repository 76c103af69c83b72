package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v3"
	shmfasthttp "github.com/shmzone/shmzone/contrib/fasthttp"
	shmfiber "github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/admit"
	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/shmzone/shmzone/prefork"
	"github.com/valyala/fasthttp"
)

// zoneSize is the size of the zone, the one the README recommends.
const zoneSize = 64 << 20

// drain is how long a child waits for its requests in flight once told to
// stop.
const drain = 10 * time.Second

// config is the command line.
type config struct {
	framework string // nethttp, fasthttp or fiber
	limiter   string // none, count or static
	headers   bool
	limit     int64 // requests a client may make a minute
	zone      string
	addr      string
	children  int
	proxies   []netip.Prefix // trusted proxies, whose X-Forwarded-For names the client
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("e2eserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: e2eserver [flags]

E2eserver is a prefork server that answers "ok" to every request, behind a
framework's limiter middleware or behind none. It writes "ready
children=PID,PID" on stdout once every child accepts. SIGTERM drains it.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.framework, "framework", "nethttp", "the server: nethttp, fasthttp or fiber")
	fs.StringVar(&c.limiter, "limiter", "count", "none for no middleware, count for the middleware over a limiter Count, static for the middleware over a limiter that admits every request and keeps no state")
	fs.BoolVar(&c.headers, "headers", true, "write the rate limit headers; false sets the middleware's NoHeaders")
	fs.Int64Var(&c.limit, "limit", 1<<40, "the requests a client address may make a minute")
	fs.StringVar(&c.zone, "zone", "/dev/shm/e2eserver.zone", "the zone file the children share, created if missing")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "the TCP address every child listens on; its port may not be 0")
	fs.IntVar(&c.children, "children", 2, "the children serving at once")
	proxy := fs.String("proxy", "", "a trusted proxy, an address or a CIDR: the middleware keys its requests by their X-Forwarded-For client")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *proxy != "" {
		ps, err := httplimit.ParsePrefixes(*proxy)
		if err != nil {
			return c, fmt.Errorf("-proxy: %w", err)
		}
		c.proxies = ps
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.framework != "nethttp" && c.framework != "fasthttp" && c.framework != "fiber":
		return c, fmt.Errorf("-framework %q: want nethttp, fasthttp or fiber", c.framework)
	case c.limiter != "none" && c.limiter != "count" && c.limiter != "static":
		return c, fmt.Errorf("-limiter %q: want none, count or static", c.limiter)
	case c.limit < 1:
		return c, fmt.Errorf("-limit %d: want at least 1", c.limit)
	case c.children < 1:
		return c, fmt.Errorf("-children %d: want at least 1", c.children)
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "e2eserver: %v\n", err)
		return 2
	}
	r := newReadiness(stdout, c.children)
	o := prefork.Options{Addr: c.addr, Children: c.children, Logf: r.logf}
	err = prefork.Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		return serve(ctx, ln, c)
	})
	if err != nil {
		fmt.Fprintf(stderr, "e2eserver: %v\n", err)
		return 1
	}
	return 0
}

// serve is the work of a child: it serves ln until ctx ends, then drains.
func serve(ctx context.Context, ln net.Listener, c config) error {
	var l limiter.Limiter
	switch c.limiter {
	case "static":
		l = static{limit: c.limit}
	case "count":
		d, err := dict.Open(c.zone, dict.Options{Size: zoneSize})
		if err != nil {
			return err
		}
		defer d.Close()
		if l, err = limiter.NewCount(d, "e2e", c.limit, time.Minute); err != nil {
			return err
		}
	}
	switch c.framework {
	case "fasthttp":
		return serveFasthttp(ctx, ln, l, c)
	case "fiber":
		return serveFiber(ctx, ln, l, c)
	default:
		return serveNetHTTP(ctx, ln, l, c)
	}
}

// serveNetHTTP serves ln with net/http, behind httplimit's middleware over
// l unless l is nil.
func serveNetHTTP(ctx context.Context, ln net.Listener, l limiter.Limiter, c config) error {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})
	if l != nil {
		o := httplimit.Options{Options: admit.Options{NoHeaders: !c.headers}, TrustedProxies: c.proxies}
		mw, err := httplimit.New(l, o)
		if err != nil {
			return err
		}
		h = mw(h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: drain}
	return prefork.Serve(ctx, srv, ln, drain)
}

// serveFasthttp serves ln with fasthttp, behind shmfasthttp's middleware
// over l unless l is nil.
func serveFasthttp(ctx context.Context, ln net.Listener, l limiter.Limiter, c config) error {
	h := func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") }
	if l != nil {
		o := shmfasthttp.Options{Options: admit.Options{NoHeaders: !c.headers}, TrustedProxies: c.proxies}
		mw, err := shmfasthttp.New(l, o)
		if err != nil {
			return err
		}
		h = mw(h)
	}
	// Keep-alive clients of a draining child are told to reconnect.
	srv := &fasthttp.Server{Handler: h, CloseOnShutdown: true}
	return prefork.ServeFunc(ctx, ln, srv.Serve, srv.ShutdownWithContext, drain)
}

// serveFiber serves ln with a fiber app, behind shmfiber's middleware over
// l unless l is nil.
func serveFiber(ctx context.Context, ln net.Listener, l limiter.Limiter, c config) error {
	var fc fiber.Config
	if len(c.proxies) > 0 {
		fc.TrustProxy, fc.ProxyHeader = true, fiber.HeaderXForwardedFor
		fc.TrustProxyConfig.Proxies = []string{c.proxies[0].String()}
	}
	app := fiber.New(fc)
	if l != nil {
		mw, err := shmfiber.New(l, shmfiber.Options{Options: admit.Options{NoHeaders: !c.headers}})
		if err != nil {
			return err
		}
		app.Use(mw)
	}
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("ok") })
	listen := func(ln net.Listener) error {
		return app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}
	return prefork.ServeFunc(ctx, ln, listen, app.ShutdownWithContext, drain)
}

// static is a limiter that admits every request, with the remaining quota
// of a first request, and keeps no state: behind it, a server pays for the
// middleware, its key and its headers, and for no decision.
type static struct{ limit int64 }

func (s static) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return s.IncomingN(ctx, key, 1, commit)
}

func (s static) IncomingN(_ context.Context, _ string, n int64, commit bool) (limiter.Decision, error) {
	rem := s.limit - n
	return limiter.Decision{Allowed: true, State: float64(rem), Remaining: rem, ResetAfter: time.Minute, Committed: commit}, nil
}

func (static) Uncommit(context.Context, string) error         { return nil }
func (static) UncommitN(context.Context, string, int64) error { return nil }
func (static) Reset(context.Context, string) error            { return nil }

// Policy is what the headers announce: the limit a minute.
func (s static) Policy() limiter.Policy { return limiter.Policy{Limit: s.limit, Window: time.Minute} }
