package shm

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

// The registry is a small table of records in the header page, which no
// eviction reaches: they stay until deleted, and survive every process.
// The layer above keeps there what a full zone must not lose. Each record
// is a nonzero key and RecordWords words. A generation word counts every
// change. A reader learns of a change with one atomic load of it.

// Record is a copy of one registry record.
type Record struct {
	Key  uint64              // never 0
	Data [RecordWords]uint64 // the words stored with Key
}

// regWords returns the registry's lock and generation words.
func (z *Zone) regWords() (lock, gen *uint64) {
	return word64(z.data, regLockOff), word64(z.data, regGenOff)
}

// Generation returns the registry's generation. Every change of a record
// adds one to it, and BumpGeneration does too. It is one atomic load.
func (z *Zone) Generation() uint64 {
	if z.gen == nil {
		return 0 // closed
	}
	return atomic.LoadUint64(z.gen)
}

// BumpGeneration adds one to the registry's generation, so that readers
// read their records again. It returns ErrReadOnly for a read-only zone.
func (z *Zone) BumpGeneration() error {
	if z.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, z.path)
	}
	_, gen := z.regWords()
	atomic.AddUint64(gen, 1)
	return nil
}

// LoadRecord returns a consistent copy of the record of key, and whether
// the registry holds one. It takes no lock, and works on a read-only zone.
func (z *Zone) LoadRecord(key uint64) (Record, bool) {
	for i := range RegSlots {
		if r, used := z.loadSlot(i); used && r.Key == key {
			return r, true
		}
	}
	return Record{}, false
}

// Records returns a consistent copy of each record the registry holds, in
// slot order.
func (z *Zone) Records() []Record {
	var rs []Record
	for i := range RegSlots {
		if r, used := z.loadSlot(i); used {
			rs = append(rs, r)
		}
	}
	return rs
}

// loadSlot copies record i under its sequence word. It retries while a
// writer is inside the record, up to regReadTries times. A writer holds the
// lock for a few stores. A dead writer's record stays odd until the next
// writer frees it, and reads as no record until then.
func (z *Zone) loadSlot(i int) (Record, bool) {
	s := regSlotAt(z.data, i)
	for range regReadTries {
		seq := atomic.LoadUint32(&s.Seq)
		if seq&1 == 0 {
			var r Record
			used := atomic.LoadUint32(&s.Used) == 1
			r.Key = atomic.LoadUint64(&s.Key)
			for j := range r.Data {
				r.Data[j] = atomic.LoadUint64(&s.Data[j])
			}
			if atomic.LoadUint32(&s.Seq) == seq {
				return r, used && r.Key != 0
			}
		}
		runtime.Gosched()
	}
	return Record{}, false
}

// regReadTries bounds a read of a record that a writer is inside: far more
// yields than a live writer's few stores take.
const regReadTries = 10000

// StoreRecord stores data under key, in the record that holds key or
// else a free one, and adds one to the generation.
//
// StoreRecord returns ErrBadOptions for key 0, ErrReadOnly for a read-only
// zone, and ErrRegistryFull when no record holds key and none is free.
func (z *Zone) StoreRecord(key uint64, data [RecordWords]uint64) error {
	return z.UpdateRecord(key, func(d *[RecordWords]uint64, _ bool) bool {
		*d = data
		return true
	})
}

// UpdateRecord stores under key the words fn makes of the record's words,
// all in one hold of the registry's lock. fn gets the words of key's record
// and true, or zeros and false when the registry holds none. It returns
// false to change nothing. UpdateRecord returns StoreRecord's errors.
func (z *Zone) UpdateRecord(key uint64, fn func(data *[RecordWords]uint64, found bool) bool) error {
	if key == 0 {
		return fmt.Errorf("%w: registry key 0", ErrBadOptions)
	}
	if z.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, z.path)
	}
	unlock := z.lockRegistry()
	defer unlock()
	free := -1
	for i := range RegSlots {
		s := regSlotAt(z.data, i)
		if s.Used == 1 && s.Key == key {
			data := s.Data
			if fn(&data, true) {
				z.writeSlotLocked(s, key, data)
			}
			return nil
		}
		if s.Used == 0 && free < 0 {
			free = i
		}
	}
	var data [RecordWords]uint64
	if !fn(&data, false) {
		return nil
	}
	if free < 0 {
		return fmt.Errorf("%w: %d records in %s", ErrRegistryFull, RegSlots, z.path)
	}
	z.writeSlotLocked(regSlotAt(z.data, free), key, data)
	return nil
}

// DeleteRecord frees the record of key and adds one to the generation. It
// reports whether the registry held one. It returns ErrReadOnly for a
// read-only zone.
func (z *Zone) DeleteRecord(key uint64) (bool, error) {
	if z.readOnly {
		return false, fmt.Errorf("%w: %s", ErrReadOnly, z.path)
	}
	unlock := z.lockRegistry()
	defer unlock()
	for i := range RegSlots {
		s := regSlotAt(z.data, i)
		if s.Used == 1 && s.Key == key {
			atomic.AddUint32(&s.Seq, 1)
			atomic.StoreUint32(&s.Used, 0)
			atomic.StoreUint64(&s.Key, 0)
			for j := range s.Data {
				atomic.StoreUint64(&s.Data[j], 0)
			}
			atomic.AddUint32(&s.Seq, 1)
			_, gen := z.regWords()
			atomic.AddUint64(gen, 1)
			return true, nil
		}
	}
	return false, nil
}

// writeSlotLocked writes key and data into s and adds one to the
// generation. The caller holds the registry's lock.
func (z *Zone) writeSlotLocked(s *regSlot, key uint64, data [RecordWords]uint64) {
	atomic.AddUint32(&s.Seq, 1)
	atomic.StoreUint64(&s.Key, key)
	for j := range data {
		atomic.StoreUint64(&s.Data[j], data[j])
	}
	atomic.StoreUint32(&s.Used, 1)
	atomic.AddUint32(&s.Seq, 1)
	_, gen := z.regWords()
	atomic.AddUint64(gen, 1)
}

// lockRegistry takes the registry's lock and returns its release. A lock
// taken over from a dead writer is repaired first: a record it left odd
// was half written, and is freed.
func (z *Zone) lockRegistry() func() {
	lock, gen := z.regWords()
	if z.Lock(lock)&LockRecovered != 0 {
		for i := range RegSlots {
			s := regSlotAt(z.data, i)
			if s.Seq&1 == 0 {
				continue
			}
			atomic.StoreUint32(&s.Used, 0)
			atomic.StoreUint64(&s.Key, 0)
			for j := range s.Data {
				atomic.StoreUint64(&s.Data[j], 0)
			}
			atomic.AddUint32(&s.Seq, 1)
		}
		atomic.AddUint64(gen, 1)
	}
	return func() { Unlock(lock) }
}
