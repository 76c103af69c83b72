package shmfasthttp

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/shmzone/shmzone/limiter/httplimit"
	"github.com/valyala/fasthttp"
)

// ClientAddr returns the address of the client that sent ctx's request. It
// works as httplimit.ClientAddr does for net/http. It is the peer's address
// unless the peer is a trusted proxy. Then X-Forwarded-For is read from the
// right. The first untrusted address is the client.
//
// Errors: ErrNoClientAddr when the connection's remote address is no IP
// address.
func ClientAddr(ctx *fasthttp.RequestCtx, trusted []netip.Prefix) (netip.Addr, error) {
	ta, ok := ctx.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: %v", ErrNoClientAddr, ctx.RemoteAddr())
	}
	peer, _ := netip.AddrFromSlice(ta.IP)
	peer = peer.Unmap()
	if !peer.IsValid() {
		return netip.Addr{}, fmt.Errorf("%w: %v", ErrNoClientAddr, ctx.RemoteAddr())
	}
	if !isTrusted(peer, trusted) {
		return peer, nil
	}
	// A trusted proxy: httplimit walks its X-Forwarded-For.
	lines := ctx.Request.Header.PeekAll(fasthttp.HeaderXForwardedFor)
	return httplimit.ForwardedBytes(peer, lines, func(a netip.Addr) bool { return isTrusted(a, trusted) }), nil
}

// isTrusted reports whether one of the trusted prefixes holds a.
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
