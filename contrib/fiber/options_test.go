package shmfiber_test

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/contrib/fiber"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/mwtest"
	"github.com/shmzone/shmzone/internal/zonetest"
	"github.com/shmzone/shmzone/limiter"
	"github.com/valyala/fasthttp"
)

// mount is mwtest.Mount of this package. A bad login returns
// fiber.ErrUnauthorized, for Refund to read the status of an error.
func mount(t *testing.T, s mwtest.Setup) (mwtest.Send, error) {
	o := shmfiber.Options{Options: s.Options}
	if s.SkipHealth {
		o.Next = func(c fiber.Ctx) bool { return c.Path() == mwtest.HealthPath }
	}
	if s.UserKey {
		o.Key = func(c fiber.Ctx) (string, error) { return c.Get("X-User"), nil }
	}
	mw, err := shmfiber.New(s.Limiter, o)
	if err != nil {
		return nil, err
	}
	app := fiber.New()
	app.Use(mw)
	handler := func(c fiber.Ctx) error {
		if c.Get("X-Login") == "bad" {
			return fiber.ErrUnauthorized
		}
		return c.SendString("ok")
	}
	for _, path := range []string{"/", "/login", mwtest.HealthPath} {
		app.Get(path, handler)
	}
	h := app.Handler()
	return func(remote, path string, hdr ...string) mwtest.Response {
		var req fasthttp.Request
		req.SetRequestURI(path)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Add(hdr[i], hdr[i+1])
		}
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(remote)), nil)
		h(&ctx)
		r := mwtest.Response{Status: ctx.Response.StatusCode(), Header: http.Header{}}
		for k, v := range ctx.Response.Header.All() {
			r.Header.Add(string(k), string(v))
		}
		return r
	}, nil
}

func TestDryRun(t *testing.T) { mwtest.CheckDryRun(t, mount) }
func TestExempt(t *testing.T) { mwtest.CheckExempt(t, mount) }
func TestRefund(t *testing.T) { mwtest.CheckRefund(t, mount) }

// TestSkipRequests: fiber's SkipSuccessfulRequests and SkipFailedRequests
// give back the cost of the answers they name. With a limit of 2, three
// requests of the skipped kind and then two of the other pass; a third of
// the other is rejected.
func TestSkipRequests(t *testing.T) {
	for _, tc := range []struct {
		name           string
		o              shmfiber.Options
		skipped, other string // X-Login values
		skippedStatus  int
		otherStatus    int
	}{
		{"successful", shmfiber.Options{SkipSuccessfulRequests: true}, "ok", "bad", 200, 401},
		{"failed", shmfiber.Options{SkipFailedRequests: true}, "bad", "ok", 401, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			l, _ := limiter.NewCount(d, "login", 2, time.Minute)
			mw, err := shmfiber.New(l, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			app := fiber.New()
			app.Use(mw)
			app.Get("/", func(c fiber.Ctx) error {
				if c.Get("X-Login") == "bad" {
					return c.SendStatus(fiber.StatusUnauthorized)
				}
				return c.SendString("ok")
			})
			steps := []struct {
				login string
				want  int
			}{
				{tc.skipped, tc.skippedStatus}, {tc.skipped, tc.skippedStatus}, {tc.skipped, tc.skippedStatus},
				{tc.other, tc.otherStatus}, {tc.other, tc.otherStatus}, {tc.other, 429},
			}
			for i, st := range steps {
				if got := do(t, app, "X-Login", st.login).StatusCode; got != st.want {
					t.Errorf("request %d (X-Login %s): status %d, want %d", i, st.login, got, st.want)
				}
			}
		})
	}
}
