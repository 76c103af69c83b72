//go:build !amd64 || race

package shm

import "sync/atomic"

func storeRelease(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
