//go:build !amd64 || race

package shm

import "sync/atomic"

func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

func storeMark(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
