package shmfiber

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v3"
	"github.com/shmzone/shmzone/limiter/httplimit"
)

// ClientAddr returns the address of the client that sent c's request. It
// follows the app's own proxy settings and httplimit.ClientAddr's rule. It
// is the peer's address, as fasthttp's RemoteIP has it. That is 0.0.0.0
// for a Unix socket.
//
// The proxy rule applies when c.IsProxyTrusted() and the app has a
// ProxyHeader. IsProxyTrusted follows the app's TrustProxy and
// TrustProxyConfig. Every line of the header is read from the right. The
// walk skips the addresses TrustProxyConfig trusts. These are its Proxies,
// addresses or CIDRs, and the ranges its flags name: loopback, private and
// link-local. The first untrusted address is the client. It is the only
// one no client can forge. A proxy appends the peer it saw to whatever the
// client sent. When every address is trusted, the leftmost is the client.
// An entry that is no address ends the walk at the trusted hop that added
// it.
//
// This is not c.IP(). That is the header whole, or with EnableIPValidation
// its first valid address: the client's own claim. IPv4-mapped IPv6
// addresses are unmapped and zones dropped.
//
// Errors: ErrNoClientAddr when the peer's TCP address holds no IP address.
func ClientAddr(c fiber.Ctx) (netip.Addr, error) {
	return clientAddr(c, ruleOf(c.App()))
}

// proxyRule is what ClientAddr reads of an app's config. An app's config
// does not change once the app is made.
type proxyRule struct {
	app    *fiber.App
	header string // ProxyHeader when TrustProxy, else ""
	tc     fiber.TrustProxyConfig
}

// ruleOf returns app's proxyRule.
func ruleOf(app *fiber.App) *proxyRule {
	cfg := app.Config()
	r := &proxyRule{app: app, tc: cfg.TrustProxyConfig}
	if cfg.TrustProxy {
		r.header = cfg.ProxyHeader
	}
	return r
}

// clientAddr is ClientAddr under the proxy rule of c's app.
func clientAddr(c fiber.Ctx, rule *proxyRule) (netip.Addr, error) {
	ip := c.RequestCtx().RemoteIP()
	peer, ok := netip.AddrFromSlice(ip)
	if !ok || !peer.IsValid() {
		return netip.Addr{}, fmt.Errorf("%w: %v", ErrNoClientAddr, c.RequestCtx().RemoteAddr())
	}
	client := peer.Unmap().WithZone("")
	if rule.header == "" {
		return client, nil
	}
	tc := &rule.tc
	// IsProxyTrusted's rule, without the string it makes of the peer.
	switch c.RequestCtx().RemoteAddr().(type) {
	case *net.UnixAddr:
		if !tc.UnixSocket {
			return client, nil
		}
	case *net.TCPAddr, *net.UDPAddr:
		if !isTrusted(client, tc) {
			return client, nil
		}
	default:
		return client, nil
	}
	lines := c.Request().Header.PeekAll(rule.header)
	return httplimit.ForwardedBytes(client, lines, func(a netip.Addr) bool { return isTrusted(a, tc) }), nil
}

// isTrusted reports whether tc trusts a as a proxy, as fiber's
// IsProxyTrusted does a peer: by its Loopback, Private and LinkLocal flags,
// then by its Proxies, each a CIDR (with a '/') or an address. Entries
// fiber could not parse (it warns of them in fiber.New) trust nothing.
func isTrusted(a netip.Addr, tc *fiber.TrustProxyConfig) bool {
	if (tc.Loopback && a.IsLoopback()) || (tc.Private && a.IsPrivate()) || (tc.LinkLocal && a.IsLinkLocalUnicast()) {
		return true
	}
	for _, s := range tc.Proxies {
		if strings.IndexByte(s, '/') >= 0 {
			p, err := netip.ParsePrefix(s)
			if err == nil && p.Masked().Contains(a) {
				return true
			}
			continue
		}
		if p, err := netip.ParseAddr(s); err == nil && p.Unmap() == a {
			return true
		}
	}
	return false
}
