package shmfasthttp_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/prefork"
	"github.com/valyala/fasthttp"
)

// The main of a prefork fasthttp server under package prefork. The master
// starts 4 children on :8080, which share one limit per client through one
// zone file. SIGHUP replaces the children one at a time. SIGTERM drains
// them. They exit when the master dies, even by SIGKILL.
func Example_prefork() {
	o := prefork.Options{Addr: ":8080", Children: 4, Logf: log.Printf}
	err := prefork.Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		return child(ctx, ln, "/dev/shm/app.zone")
	})
	if err != nil {
		log.Fatal(err)
	}
}

// child is the work of each child process. It admits 100 requests a
// minute per client address, across every child, and serves ln until ctx
// ends. Then it drains.
func child(ctx context.Context, ln net.Listener, zonePath string) error {
	d, err := dict.Open(zonePath, dict.Options{Size: 64 << 20})
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := limiter.NewCount(d, "api", 100, time.Minute)
	if err != nil {
		return err
	}
	// README:
	limit, err := shmfasthttp.New(l, shmfasthttp.Options{})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	srv := &fasthttp.Server{
		Handler: limit(func(c *fasthttp.RequestCtx) {
			fmt.Fprintf(c, "hello from pid %d\n", pid)
		}),
		// Keep-alive clients of a draining child are told to reconnect.
		CloseOnShutdown: true,
	}
	return prefork.ServeFunc(ctx, ln, srv.Serve, srv.ShutdownWithContext, 10*time.Second)
	// README end.
}
