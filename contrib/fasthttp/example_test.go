package shmfasthttp_test

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/valyala/fasthttp"
)

// A fasthttp handler limited per client address through a zone.
func Example() {
	dir, _ := os.MkdirTemp("", "shmfasthttp-example")
	defer os.RemoveAll(dir)
	zonePath := filepath.Join(dir, "app.zone")

	d, err := dict.Open(zonePath, dict.Options{Size: 64 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	// 10 requests a second per client address, in bursts of up to 20,
	// across every child.
	l, err := limiter.NewGCRA(d, "api", 10, 20)
	if err != nil {
		log.Fatal(err)
	}
	limit, err := shmfasthttp.New(l, shmfasthttp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	handler := limit(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("hello\n") })

	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4321}, nil)
	handler(&ctx)
	h := &ctx.Response.Header
	fmt.Println(ctx.Response.StatusCode(), string(h.Peek("RateLimit-Policy")), string(h.Peek("RateLimit")))
	// Output: 200 "default";q=20;w=2 "default";r=19;t=1
}
