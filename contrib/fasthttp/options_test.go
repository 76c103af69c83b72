package shmfasthttp_test

import (
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/shmzone/shmzone/contrib/fasthttp"
	"github.com/shmzone/shmzone/internal/mwtest"
	"github.com/valyala/fasthttp"
)

// mount is mwtest.Mount of this package.
func mount(t *testing.T, s mwtest.Setup) (mwtest.Send, error) {
	o := shmfasthttp.Options{Options: s.Options}
	if s.SkipHealth {
		o.Next = func(ctx *fasthttp.RequestCtx) bool { return string(ctx.Path()) == mwtest.HealthPath }
	}
	if s.UserKey {
		o.Key = func(ctx *fasthttp.RequestCtx) (string, error) { return string(ctx.Request.Header.Peek("X-User")), nil }
	}
	mw, err := shmfasthttp.New(s.Limiter, o)
	if err != nil {
		return nil, err
	}
	h := mw(func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Request.Header.Peek("X-Login")) == "bad" {
			ctx.Error("bad login", fasthttp.StatusUnauthorized)
			return
		}
		ctx.SetBodyString("ok")
	})
	return func(remote, path string, hdr ...string) mwtest.Response {
		var req fasthttp.Request
		req.SetRequestURI("http://x" + path)
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
