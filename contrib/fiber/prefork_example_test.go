package shmfiber_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/prefork"
)

// The main of a prefork fiber app under package prefork. The master starts
// 4 children on :8080, which share one limit per client through one zone
// file. SIGHUP replaces the children one at a time. SIGTERM drains them.
// They exit when the master dies, even by SIGKILL.
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
	limit, err := shmfiber.New(l, shmfiber.Options{})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	app := fiber.New()
	app.Use(limit)
	app.Get("/", func(c fiber.Ctx) error {
		return c.SendString(fmt.Sprintf("hello from pid %d\n", pid))
	})
	listen := func(ln net.Listener) error {
		return app.Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
	}
	return prefork.ServeFunc(ctx, ln, listen, app.ShutdownWithContext, 10*time.Second)
	// README end.
}
