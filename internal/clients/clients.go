// Package clients draws the keys of the multi-process benchmarks as a
// server sees its clients: addresses drawn at random, with no regard to the
// zone's hashes or shards, which arrive at its processes mixed.
package clients

import (
	"fmt"
	"math/rand/v2"
)

// Addrs returns n distinct keys that look like the client addresses
// a server limits or counts by, "203.0.113.7:51234": a random IPv4 address
// and port each, drawn from rand.NewPCG(seed, stream). A multi-process
// benchmark gives process i stream i, so that its keys are its own (two
// streams share a key with odds of about n²/2⁴⁸) and spread over the zone
// as a server's do, with no regard to hashes or shards.
func Addrs(seed, stream uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, stream))
	seen := make(map[string]bool, n)
	ks := make([]string, 0, n)
	for len(ks) < n {
		ip := r.Uint32()
		port := 1024 + r.IntN(65536-1024)
		k := fmt.Sprintf("%d.%d.%d.%d:%d", byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip), port)
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	return ks
}

// Arrival is a client's first request: the I-th key of process Proc.
type Arrival struct{ Proc, I int }

// arrivalStream is the random stream of Arrivals, apart from the keys'.
const arrivalStream = 1<<32 + 1

// Arrivals returns the order in which the n clients of each of procs
// processes first arrive, a random interleaving drawn from seed. A server's
// processes create their clients' entries as those arrive, all at once, so
// that one process's entries lie among the others' in the zone's pages; a
// benchmark whose processes each created theirs in a burst of their own
// would measure entries that no other process's share a page or a cache
// line with, which no server has. Each process's clients arrive in the
// order of their index.
func Arrivals(seed uint64, procs, n int) []Arrival {
	r := rand.New(rand.NewPCG(seed, arrivalStream))
	left := make([]int, procs) // clients of each process yet to arrive
	for p := range left {
		left[p] = n
	}
	out := make([]Arrival, 0, procs*n)
	for rest := procs * n; rest > 0; rest-- {
		// The next arrival is any waiting client, equally likely.
		k := r.IntN(rest)
		p := 0
		for k >= left[p] {
			k -= left[p]
			p++
		}
		out = append(out, Arrival{Proc: p, I: n - left[p]})
		left[p]--
	}
	return out
}
