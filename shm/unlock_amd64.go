//go:build amd64 && !race

package shm

// storeRelease stores v to *p with release order, without the full barrier of
// atomic.StoreUint64 (an XCHG on amd64), which costs as much again as the
// lock's CAS. A plain store is a release on amd64 (TSO: no store is
// reordered with an earlier load or store), and the compiler keeps it after
// the loads and stores before it (each memory operation is ordered on the
// memory state it reads, and a store is scheduled after every load of the
// state it replaces). Being plain Go, it inlines: a call to assembly costs
// two calls through the ABI wrapper, a few nanoseconds on an operation of
// forty. Under the race detector the atomic store is used instead, so that
// the detector sees the release.
func storeRelease(p *uint64, v uint64) { *p = v }

// storeMark is storeRelease that the compiler cannot drop: assembly it does
// not see into (unlock_amd64.s).
//
//go:noescape
func storeMark(p *uint64, v uint64)
