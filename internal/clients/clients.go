// Package clients draws the keys of the multi-process benchmarks as a
// server sees its clients: addresses drawn at random, with no regard to the
// zone's hashes or shards, which arrive at its processes mixed.
package clients

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Addrs returns n distinct keys that look like client addresses, such as
// "203.0.113.7:51234". Each is a random IPv4 address and port. They are
// drawn from rand.NewPCG(seed, stream). A multi-process benchmark gives
// process i stream i, so that its keys are its own. Two streams share a
// key with odds of about n²/2⁴⁸. The keys spread over the zone as a
// server's do, with no regard to hashes or shards.
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
// processes first arrive. It is a random interleaving drawn from seed.
// Each process's clients arrive in the order of their index.
//
// A server's processes create their clients' entries as those arrive, all
// at once (Turns). Suppose each process created its entries in a burst of
// its own. Then where the entries go would depend on when the processes
// started, not on the zone alone.
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

// Turns is a counter in a file that processes map shared. By it, they
// create their clients' entries in the order of Arrivals, each process its
// own. The process whose client arrives j-th creates it once the counter
// reaches j. It then sets the counter to j+1.
//
// A server's processes create the entries of their clients as those
// arrive. So the entries of different processes are made in a mixed
// order, each by its own process. Where the zone puts them is then the
// zone's choice, as in a server.
type Turns struct {
	mem []byte
	n   *atomic.Uint64
}

// OpenTurns maps the counter in the file at path. It creates the file, at
// 0, if absent.
func OpenTurns(path string) (*Turns, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(8); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clients: map %s: %w", path, err)
	}
	return &Turns{mem: mem, n: (*atomic.Uint64)(unsafe.Pointer(&mem[0]))}, nil
}

// Close unmaps the counter.
func (t *Turns) Close() error { return syscall.Munmap(t.mem) }

// Take calls create(i) for each client i of process id among arrivals, in
// its turn. A client's turn comes after the clients that arrive before it.
// Take gives up with an error when a turn has not come within timeout. The
// process whose turn it is may have died.
func (t *Turns) Take(id int, arrivals []Arrival, timeout time.Duration, create func(i int) error) error {
	for j, a := range arrivals {
		if a.Proc != id {
			continue
		}
		deadline := time.Now().Add(timeout)
		for spins := 0; t.n.Load() != uint64(j); spins++ {
			if spins%1024 == 1023 && time.Now().After(deadline) {
				return fmt.Errorf("clients: arrival %d of process %d: its turn did not come in %v (the counter is at %d)", j, id, timeout, t.n.Load())
			}
			runtime.Gosched()
		}
		if err := create(a.I); err != nil {
			return err
		}
		t.n.Store(uint64(j + 1))
	}
	return nil
}

// TurnTimeout is how long CreateInTurns waits for a turn. It is far longer
// than any process takes to create its share of clients. So only a process
// that died or never started makes it give up.
const TurnTimeout = time.Minute

// CreateInTurns is what a benchmark process does before its start. It
// creates its n clients, calling create(i) for its client i. It does so in
// its turns among procs processes, by the counter in the file at path. The
// clients arrive in the order Arrivals(seed, procs, n) gives.
func CreateInTurns(path string, seed uint64, id, procs, n int, create func(i int) error) error {
	t, err := OpenTurns(path)
	if err != nil {
		return err
	}
	err = t.Take(id, Arrivals(seed, procs, n), TurnTimeout, create)
	return errors.Join(err, t.Close())
}
