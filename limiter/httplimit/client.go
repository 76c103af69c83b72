package httplimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr returns the address of the client that sent r. It is the
// peer's address, r.RemoteAddr, unless the peer is a trusted proxy. Then
// X-Forwarded-For is read from the right, skipping trusted addresses. The
// first untrusted one is the client. It is the only one no client can
// forge. When every address is trusted, the leftmost is the client. An
// entry that is no address ends the walk at the trusted hop that added it.
// IPv4-mapped IPv6 addresses are unmapped and zones dropped.
//
// Errors: ErrNoClientAddr when RemoteAddr is no address.
func ClientAddr(r *http.Request, trusted []netip.Prefix) (netip.Addr, error) {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q", ErrNoClientAddr, r.RemoteAddr)
	}
	if !isTrusted(peer, trusted) {
		return peer, nil
	}
	return Forwarded(peer, r.Header.Values("X-Forwarded-For"), func(a netip.Addr) bool { return isTrusted(a, trusted) }), nil
}

// Forwarded returns the client behind peer, a proxy that trusted accepts.
// It reads the lines of the forwarding header the proxy sent. These are
// X-Forwarded-For's comma-separated addresses, each line as received, in
// order. The lines are read from the right, skipping the addresses trusted
// accepts. The first it does not accept is the client. It is the only one
// no client can forge. A proxy appends the peer it saw to whatever the
// client sent.
//
// When every address is trusted, the leftmost is the client. An entry that
// is no address, with or without a port, ends the walk. The client is then
// the trusted hop that added it. IPv4-mapped IPv6 addresses are unmapped
// and zones dropped.
//
// ClientAddr is Forwarded with trusted prefixes. Adapters of other servers
// call it with their own proxy settings.
func Forwarded(peer netip.Addr, lines []string, trusted func(netip.Addr) bool) netip.Addr {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		var done bool
		if client, done = walkLine(client, lines[i], trusted); done {
			return client
		}
	}
	return client
}

// ForwardedBytes is Forwarded of lines held as bytes, as fasthttp's
// PeekAll returns them. It allocates nothing. It keeps no part of lines.
func ForwardedBytes(peer netip.Addr, lines [][]byte, trusted func(netip.Addr) bool) netip.Addr {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		var done bool
		if client, done = walkLine(client, view(lines[i]), trusted); done {
			return client
		}
	}
	return client
}

// walkLine walks one line of a forwarding header from the right, as
// Forwarded does. client is the client so far. done reports that the walk
// ends in this line.
func walkLine(client netip.Addr, list string, trusted func(netip.Addr) bool) (_ netip.Addr, done bool) {
	for list != "" {
		var item string
		if j := strings.LastIndexByte(list, ','); j >= 0 {
			list, item = list[:j], list[j+1:]
		} else {
			list, item = "", list
		}
		addr, ok := parseAddr(strings.TrimSpace(item))
		if !ok {
			return client, true // forged or broken: trust the hop that added it
		}
		if !trusted(addr) {
			return addr, true
		}
		client = addr
	}
	return client, false
}

// parseAddr parses an address with or without a port ("192.0.2.1",
// "192.0.2.1:80", "[2001:db8::1]:80", "2001:db8::1").
func parseAddr(s string) (netip.Addr, bool) {
	// A parse that fails allocates its error: try the form s has first.
	// An address with a port is "[v6]:port" or has one colon.
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return ap.Addr().Unmap().WithZone(""), true
		}
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap().WithZone(""), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// AddrKey returns the limiter key of a client address. It is the address
// for IPv4. It is the /64 for IPv6, such as "2001:db8:1:2::/64". One IPv6
// host commonly holds a whole /64. AddrKey is the function AddrKeyFunc(64)
// returns.
func AddrKey(a netip.Addr) string { return addrKey(a, DefaultIPv6Prefix) }

// DefaultIPv6Prefix is the prefix length of an IPv6 client's address key,
// unless told otherwise.
const DefaultIPv6Prefix = 64

// AddrKeyFunc returns the function that makes a client address a limiter
// key. The key is the address for IPv4, and its /bits for IPv6. An
// IPv4-mapped address is taken as IPv4, and a zone is dropped. bits is 64,
// 56 or 48. 0 means DefaultIPv6Prefix. A host commonly holds a /64, a site
// a /56 or a /48. A wider prefix folds a flood from one network into one
// key. It also folds the clients that share that network. The function
// keeps the keys of the last few thousand addresses. So a returning
// client's key allocates nothing. Any goroutine may call it.
//
// Errors: ErrBadIPv6Prefix for any other bits.
func AddrKeyFunc(bits int) (func(netip.Addr) string, error) {
	switch bits {
	case 0:
		bits = DefaultIPv6Prefix
	case 48, 56, 64:
	default:
		return nil, fmt.Errorf("%w: /%d; want /64, /56 or /48", ErrBadIPv6Prefix, bits)
	}
	return (&keyCache{bits: bits}).key, nil
}

// addrKey is the key of a with IPv6 folded into its /bits, for bits that
// AddrKeyFunc accepts. An IPv4-mapped address is its IPv4 address, and a
// zone is dropped, as ClientAddr does.
func addrKey(a netip.Addr, bits int) string {
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(bits)
	return p.String()
}

// ParsePrefixes parses trusted proxies given as CIDRs ("10.0.0.0/8") or
// single addresses ("192.0.2.7"). Errors: ErrBadProxy naming the string.
func ParsePrefixes(ss ...string) ([]netip.Prefix, error) {
	ps := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%w: %q: %v", ErrBadProxy, s, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}
