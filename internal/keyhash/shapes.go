package keyhash

import (
	"fmt"
	"math/rand/v2"
)

// Shapes are the shapes of keys as servers make them. They are client
// addresses, alone or behind a limiter's prefix ("kind|name|"). The last
// is IPv6 /64 prefixes behind one.
var Shapes = []string{"ipv4", "limiter-ipv4", "limiter-ipv6"}

// Keys returns 4096 keys of a shape, for benchmarks. They are drawn at
// random with a fixed seed.
func Keys(shape string) []string {
	r := rand.New(rand.NewPCG(1, 2))
	ks := make([]string, 4096)
	for i := range ks {
		ip := fmt.Sprintf("%d.%d.%d.%d", 1+r.IntN(223), r.IntN(256), r.IntN(256), 1+r.IntN(254))
		switch shape {
		case "ipv4":
			ks[i] = ip
		case "limiter-ipv4":
			ks[i] = "req|api|" + ip
		case "limiter-ipv6":
			ks[i] = fmt.Sprintf("req|api|2001:db8:%x:%x::/64", r.IntN(1<<16), r.IntN(1<<16))
		default:
			panic("keyhash: no key shape " + shape)
		}
	}
	return ks
}
