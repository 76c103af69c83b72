package shmfiber_test

import (
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/session"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// A fiber app whose children share one limit per client and one session
// store through a zone.
func Example() {
	dir, _ := os.MkdirTemp("", "shmfiber-example")
	defer os.RemoveAll(dir)
	zonePath := filepath.Join(dir, "app.zone")

	d, err := dict.Open(zonePath, dict.Options{Size: 64 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	// 100 requests per minute per client address, across every child.
	l, err := limiter.NewCount(d, "api", 100, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := shmfiber.New(l, shmfiber.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// Sessions every child sees, under their own prefix in the zone.
	store, err := shmfiber.NewStorage(d, shmfiber.StorageOptions{Prefix: "sess:", NoEvict: true})
	if err != nil {
		log.Fatal(err)
	}
	app := fiber.New()
	app.Use(limit, session.New(session.Config{Storage: store}))
	app.Get("/", func(c fiber.Ctx) error { return c.SendString("hello\n") })

	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
	// Output: 200 "default";q=100;w=60 "default";r=99;t=60
}
