package httplimit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

func TestClientAddr(t *testing.T) {
	trusted, err := ParsePrefixes("10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{"no proxy", "198.51.100.1:1234", nil, "198.51.100.1"},
		{"untrusted peer's XFF is ignored", "198.51.100.1:1234", []string{"203.0.113.9"}, "198.51.100.1"},
		{"trusted peer", "10.1.2.3:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"single trusted address", "192.0.2.7:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"spoofed left part", "10.1.2.3:80", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		{"trusted hops skipped", "10.1.2.3:80", []string{"1.2.3.4, 203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
		{"several headers", "10.1.2.3:80", []string{"1.2.3.4, 203.0.113.9", "10.9.9.9"}, "203.0.113.9"},
		{"all trusted", "10.1.2.3:80", []string{"10.0.0.1, 10.0.0.2"}, "10.0.0.1"},
		{"no header from a trusted peer", "10.1.2.3:80", nil, "10.1.2.3"},
		{"garbage stops at the trusted hop", "10.1.2.3:80", []string{"203.0.113.9, nonsense, 10.0.0.5"}, "10.0.0.5"},
		{"empty item", "10.1.2.3:80", []string{"203.0.113.9,"}, "10.1.2.3"},
		{"entry with a port", "10.1.2.3:80", []string{"203.0.113.9:5555"}, "203.0.113.9"},
		{"IPv6 entry with a port", "10.1.2.3:80", []string{"[2001:db8:1:2::9]:443"}, "2001:db8:1:2::9"},
		{"IPv6 peer", "[2001:db8:1:2::3]:80", nil, "2001:db8:1:2::3"},
		{"IPv6 trusted proxy", "[2001:db8:ffff::1]:80", []string{"2001:db8:1:2::3"}, "2001:db8:1:2::3"},
		{"IPv4-mapped peer", "[::ffff:198.51.100.1]:80", nil, "198.51.100.1"},
		{"IPv4-mapped trusted peer", "[::ffff:10.1.2.3]:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"zone dropped", "[fe80::1%eth0]:80", nil, "fe80::1"},
		{"no port", "198.51.100.1", nil, "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, err := ClientAddr(r, trusted)
			if err != nil || got != netip.MustParseAddr(tt.want) {
				t.Errorf("ClientAddr(%s, XFF %q) = %v, %v; want %s", tt.remote, tt.xff, got, err, tt.want)
			}
			peer, _ := parseAddr(tt.remote)
			if !isTrusted(peer, trusted) {
				return
			}
			// A trusted peer: the walk of the lines as strings and as bytes.
			lines := make([][]byte, len(tt.xff))
			for i, v := range tt.xff {
				lines[i] = []byte(v)
			}
			trust := func(a netip.Addr) bool { return isTrusted(a, trusted) }
			if got := Forwarded(peer, tt.xff, trust); got != netip.MustParseAddr(tt.want) {
				t.Errorf("Forwarded(%v, %q) = %v, want %s", peer, tt.xff, got, tt.want)
			}
			if got := ForwardedBytes(peer, lines, trust); got != netip.MustParseAddr(tt.want) {
				t.Errorf("ForwardedBytes(%v, %q) = %v, want %s", peer, tt.xff, got, tt.want)
			}
		})
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "@"
	if _, err := ClientAddr(r, trusted); !errors.Is(err, ErrNoClientAddr) {
		t.Errorf("ClientAddr(RemoteAddr @) = %v, want ErrNoClientAddr", err)
	}
}

func TestAddrKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"198.51.100.1", "198.51.100.1"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := AddrKey(netip.MustParseAddr(tt.in)); got != tt.want {
				t.Errorf("AddrKey(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAddrKeyFunc(t *testing.T) {
	tests := []struct {
		bits int
		in   string
		want string
	}{
		{0, "2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{64, "2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{56, "2001:db8:1:2ff:aaaa::1", "2001:db8:1:200::/56"},
		{48, "2001:db8:1:2ff:aaaa::1", "2001:db8:1::/48"},
		{48, "198.51.100.1", "198.51.100.1"},
		{48, "::ffff:198.51.100.1", "198.51.100.1"}, // IPv4-mapped: IPv4
		{56, "fe80::1:2%eth0", "fe80::/56"},         // the zone dropped
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("/%d/%s", tt.bits, tt.in), func(t *testing.T) {
			key, err := AddrKeyFunc(tt.bits)
			if err != nil {
				t.Fatal(err)
			}
			if got := key(netip.MustParseAddr(tt.in)); got != tt.want {
				t.Errorf("AddrKeyFunc(%d)(%s) = %q, want %q", tt.bits, tt.in, got, tt.want)
			}
		})
	}
	for _, bits := range []int{-1, 1, 32, 47, 49, 63, 65, 96, 128, 129} {
		if key, err := AddrKeyFunc(bits); key != nil || !errors.Is(err, ErrBadIPv6Prefix) {
			t.Errorf("AddrKeyFunc(%d) = %v, want ErrBadIPv6Prefix", bits, err)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes("10.1.2.3/8", "192.0.2.7", "2001:db8::/32")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("2001:db8::/32")}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParsePrefixes = %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("prefix %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "example.com", "10.0.0.0/8 "} {
		if _, err := ParsePrefixes(bad); !errors.Is(err, ErrBadProxy) {
			t.Errorf("ParsePrefixes(%q) = %v, want ErrBadProxy", bad, err)
		}
	}
}

// TestKeyCache: the cached key function gives addrKey's key for IPv4,
// IPv6, IPv4-mapped and zoned addresses, first and again, with more
// addresses than slots, so that slots are replaced; and a returning
// client's key allocates nothing.
func TestKeyCache(t *testing.T) {
	for _, bits := range []int{48, 56, 64} {
		key, err := AddrKeyFunc(bits)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(testutil.Seed(t), uint64(bits)))
		addrs := make([]netip.Addr, 3*keySlots)
		for i := range addrs {
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:8], r.Uint64())
			binary.LittleEndian.PutUint64(b[8:], r.Uint64())
			switch i % 4 {
			case 0:
				addrs[i] = netip.AddrFrom4([4]byte(b[:4]))
			case 1:
				addrs[i] = netip.AddrFrom16(b)
			case 2:
				addrs[i] = netip.AddrFrom16(netip.AddrFrom4([4]byte(b[:4])).As16()) // IPv4-mapped
			case 3:
				addrs[i] = netip.AddrFrom16(b).WithZone("eth0")
			}
		}
		addrs = append(addrs, netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")) // the longest key
		first := make([]string, len(addrs))
		for round := range 2 {
			for i, a := range addrs {
				got, want := key(a), netipKey(a, bits)
				if got != want {
					t.Fatalf("/%d, round %d: key(%v) = %q, want %q", bits, round, a, got, want)
				}
				if round == 0 {
					first[i] = got
				}
			}
		}
		// A key returned before its slot was taken by another address
		// keeps its bytes.
		for i, a := range addrs {
			if want := netipKey(a, bits); first[i] != want {
				t.Fatalf("/%d: key(%v) became %q after its slot was reused, want %q", bits, a, first[i], want)
			}
		}
		a := addrs[1]
		key(a)
		if n := testing.AllocsPerRun(100, func() { key(a) }); n != 0 {
			t.Errorf("/%d: a returning client's key: %v allocations, want 0", bits, n)
		}
	}
}

// netipKey is a client's key as netip's String methods write it: the
// unmapped IPv4 address, or the IPv6 address's /bits prefix.
func netipKey(a netip.Addr, bits int) string {
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, bits).Masked().String()
}

// TestForwardedBytesAllocatesNothing: the walk of X-Forwarded-For held as
// bytes allocates nothing, for IPv4 and IPv6 clients behind two proxies.
func TestForwardedBytesAllocatesNothing(t *testing.T) {
	trusted, _ := ParsePrefixes("10.0.0.0/8")
	trust := func(a netip.Addr) bool { return isTrusted(a, trusted) }
	peer := netip.MustParseAddr("10.1.2.3")
	for _, line := range []string{"203.0.113.9, 10.0.0.7", "2001:db8:1:2::9, 10.0.0.7"} {
		lines := [][]byte{[]byte("198.51.100.1"), []byte(line)}
		want := netip.MustParseAddr(line[:strings.IndexByte(line, ',')])
		var got netip.Addr
		if n := testing.AllocsPerRun(100, func() { got = ForwardedBytes(peer, lines, trust) }); n != 0 || got != want {
			t.Errorf("ForwardedBytes(%q) = %v with %v allocations; want %v with 0", lines, got, n, want)
		}
	}
}
