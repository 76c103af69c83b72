package limiter

import (
	"encoding/binary"

	"github.com/shmzone/shmzone/dict"
)

// The values limiters keep in the dictionary, one per key. Count and Conn
// keep a dict int, GCRA an int of Unix nanoseconds; the others keep bytes,
// little-endian, laid out here:
//
//	Req (16 bytes, TTL to when it has drained; lua-resty-limit-traffic's rec_t):
//	+-------------------+-------------------+
//	| excess_m  uint64  | last_ms   uint64  |
//	+-------------------+-------------------+
//	0                   8                   16
//
//	SlidingWindow (24 bytes, TTL two windows):
//	+-------------------+-------------------+-------------------+
//	| window    int64   | cur       int64   | prev      int64   |
//	+-------------------+-------------------+-------------------+
//	0                   8                   16                  24
//	window: the current window's number, now/window; cur, prev: requests
//	counted in it and in the one before.
//
//	leased Conn (n × 24 bytes, 0 < n ≤ MaxHolders, TTL to the last expiry):
//	+-------------------+-------------------+-------------------+----
//	| holder    uint64  | slots     int64   | expiry_ms int64   | …
//	+-------------------+-------------------+-------------------+----
//	0                   8                   16                  24
//	one record per process (per Conn) holding slots of the key.
const (
	reqExcessOff = 0
	reqLastOff   = reqExcessOff + 8
	reqSize      = reqLastOff + 8

	swWindowOff = 0
	swCurOff    = swWindowOff + 8
	swPrevOff   = swCurOff + 8
	swSize      = swPrevOff + 8

	leaseHolderOff = 0
	leaseSlotsOff  = leaseHolderOff + 8
	leaseExpiryOff = leaseSlotsOff + 8
	leaseSize      = leaseExpiryOff + 8
)

// reqState is a Req key's state.
type reqState struct {
	excess uint64 // milli-requests
	last   int64  // Unix ms of the last committed request
}

func getReq(b []byte) reqState {
	return reqState{
		excess: binary.LittleEndian.Uint64(b[reqExcessOff:]),
		last:   int64(binary.LittleEndian.Uint64(b[reqLastOff:])),
	}
}

func putReq(b []byte, s reqState) {
	binary.LittleEndian.PutUint64(b[reqExcessOff:], s.excess)
	binary.LittleEndian.PutUint64(b[reqLastOff:], uint64(s.last))
}

// reqOfState and stateOfReq read and write a Req's state as dict.Revise
// passes it: word i is bytes 8i to 8i+7, so excess is W0 and last W1.
func reqOfState(v dict.State) reqState { return reqState{excess: v.W0, last: int64(v.W1)} }

func stateOfReq(s reqState) dict.State { return dict.State{W0: s.excess, W1: uint64(s.last)} }

// The words above are the record's fields only while the layout is this.
var _ = [1]struct{}{}[reqExcessOff+reqLastOff-8+swWindowOff+swCurOff+swPrevOff-24]

// swState is a SlidingWindow key's state.
type swState struct {
	window, cur, prev int64
}

func getSW(b []byte) swState {
	return swState{
		window: int64(binary.LittleEndian.Uint64(b[swWindowOff:])),
		cur:    int64(binary.LittleEndian.Uint64(b[swCurOff:])),
		prev:   int64(binary.LittleEndian.Uint64(b[swPrevOff:])),
	}
}

func putSW(b []byte, s swState) {
	binary.LittleEndian.PutUint64(b[swWindowOff:], uint64(s.window))
	binary.LittleEndian.PutUint64(b[swCurOff:], uint64(s.cur))
	binary.LittleEndian.PutUint64(b[swPrevOff:], uint64(s.prev))
}

// swOfState and stateOfSW read and write a SlidingWindow's state as
// dict.Revise passes it: window, cur and prev are W0, W1 and W2.
func swOfState(v dict.State) swState {
	return swState{window: int64(v.W0), cur: int64(v.W1), prev: int64(v.W2)}
}

func stateOfSW(s swState) dict.State {
	return dict.State{W0: uint64(s.window), W1: uint64(s.cur), W2: uint64(s.prev)}
}

// lease is one record of a leased Conn key.
type lease struct {
	holder uint64 // the holding Conn: pid << 32 | random
	slots  int64  // slots it holds
	expiry int64  // Unix ms; the record counts while now < expiry
}

func getLease(b []byte) lease {
	return lease{
		holder: binary.LittleEndian.Uint64(b[leaseHolderOff:]),
		slots:  int64(binary.LittleEndian.Uint64(b[leaseSlotsOff:])),
		expiry: int64(binary.LittleEndian.Uint64(b[leaseExpiryOff:])),
	}
}

func putLease(b []byte, l lease) {
	binary.LittleEndian.PutUint64(b[leaseHolderOff:], l.holder)
	binary.LittleEndian.PutUint64(b[leaseSlotsOff:], uint64(l.slots))
	binary.LittleEndian.PutUint64(b[leaseExpiryOff:], uint64(l.expiry))
}
