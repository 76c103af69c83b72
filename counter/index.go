package counter

import (
	"sync"
	"sync/atomic"
)

// index maps keys to entries. Lookups of known keys read an immutable map
// through one atomic pointer, with no lock and no write to shared memory;
// new keys go to a fresh map under a mutex and are promoted into a new
// immutable map once the lookups that missed it outnumber its keys, so a
// promotion's copy costs O(1) per miss, amortized (sync.Map's scheme,
// without its interface keys, which would allocate).
type index struct {
	read atomic.Pointer[map[string]*entry] // never changed once stored

	mu     sync.Mutex
	fresh  map[string]*entry // under mu: entries not yet in read
	misses int               // under mu: lookups that passed read since the last promotion
}

func (x *index) init() {
	m := map[string]*entry{}
	x.read.Store(&m)
}

// load returns key's entry from the immutable map, or nil.
func (x *index) load(key string) *entry {
	return (*x.read.Load())[key]
}

// lookupLocked returns key's entry, or nil; a lookup that finds nothing in
// read counts a miss and may promote. Needs x.mu.
func (x *index) lookupLocked(key string) *entry {
	read := *x.read.Load()
	if e := read[key]; e != nil {
		return e
	}
	e := x.fresh[key]
	if e != nil {
		x.missLocked(len(read))
	}
	return e
}

// insertLocked adds a new key's entry. Needs x.mu.
func (x *index) insertLocked(e *entry) {
	if x.fresh == nil {
		x.fresh = map[string]*entry{}
	}
	x.fresh[e.key] = e
	x.missLocked(len(*x.read.Load()))
}

func (x *index) missLocked(readLen int) {
	x.misses++
	if x.misses > readLen {
		x.rebuildLocked(nil)
	}
}

// rebuildLocked stores a new immutable map of every entry for which drop is
// false (drop nil keeps all), fresh ones included. Needs x.mu.
func (x *index) rebuildLocked(drop func(*entry) bool) {
	m := make(map[string]*entry, x.lenLocked())
	x.eachLocked(func(e *entry) {
		if drop == nil || !drop(e) {
			m[e.key] = e
		}
	})
	x.read.Store(&m)
	x.fresh, x.misses = nil, 0
}

// eachLocked calls fn with every entry. Needs x.mu.
func (x *index) eachLocked(fn func(*entry)) {
	for _, src := range [2]map[string]*entry{*x.read.Load(), x.fresh} {
		for _, e := range src {
			fn(e)
		}
	}
}

// lenLocked returns the number of entries. Needs x.mu.
func (x *index) lenLocked() int {
	return len(*x.read.Load()) + len(x.fresh)
}
