package httplimit

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
)

// keyCache holds the keys of the client addresses seen last. A key is a
// string, and making one allocates: with the cache, a returning client's
// key is made once. The cache is direct-mapped: an address goes in the
// slot its hash picks, and replaces the address there. Its slots are
// atomic pointers to entries that never change, so any goroutine may use
// it.
type keyCache struct {
	bits  int // the IPv6 prefix length
	slots [keySlots]atomic.Pointer[cachedKey]
}

// keySlots is the number of a keyCache's slots, 1<<keyBits.
const (
	keyBits  = 12
	keySlots = 1 << keyBits
)

// cachedKey is a client address, IPv6 masked to the prefix, and its key.
type cachedKey struct {
	a   netip.Addr
	key string
}

// key returns the key of a, as addrKey(a, c.bits).
func (c *keyCache) key(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(c.bits)
		a = p.Addr()
	}
	b := a.As16()
	h := (binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[8:])) * 0xff51afd7ed558ccd
	slot := &c.slots[h>>(64-keyBits)]
	if e := slot.Load(); e != nil && e.a == a {
		return e.key
	}
	e := &cachedKey{a: a, key: addrKey(a, c.bits)}
	slot.Store(e)
	return e.key
}
