//go:build amd64 && !race

package shm

// storeRelease stores v to *p with release order, without the full barrier of
// atomic.StoreUint64 (an XCHG on amd64), which costs as much again as the
// lock's CAS. Under the race detector the atomic store is used instead, so
// that the detector sees the release.
//
//go:noescape
func storeRelease(p *uint64, v uint64)
