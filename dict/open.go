package dict

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shmzone/shmzone/internal/coarseclock"
	"github.com/shmzone/shmzone/shm"
	"github.com/shmzone/shmzone/slab"
)

// Open opens the dictionary in the zone file at path. It creates the zone
// when the file is absent and o.Size is positive. Every process of a service
// may call Open with the same arguments at once: one creates, the others
// attach.
//
// A zone that exists must have been created with o.Size, unless o.Size is
// 0. Open returns an error wrapping ErrSizeMismatch otherwise. The error
// names both sizes and the shmctl commands that resize the zone.
//
// A writable Open rebuilds a shard whose slab header is corrupt, from the
// zone's geometry and the shard's page descriptors. It then repairs the
// shard from its entries. The entries it cannot find are lost; no other
// shard's are.
//
// A writable Dict keeps in process memory the counts it has not yet added to
// the zone's Stats: 16 bytes per 4 KiB slab page.
//
// Open also returns the errors of shm.Open, such as ErrNotZone, ErrNotOwner,
// ErrVersion and ErrCorrupt; match them with errors.Is. A read-only Open
// returns ErrCorrupt for a shard that fails validation. A fault while Open
// reads the shards is shm.ErrFault.
func Open(path string, o Options) (d *Dict, err error) {
	z, err := shm.Open(path, shm.Options{
		Size:     o.Size,
		Shards:   o.Shards,
		Perm:     o.Perm,
		ReadOnly: o.ReadOnly,
		Layout:   Layout,
		Format:   format,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d = nil
			z.Close()
			if errors.Is(err, shm.ErrFault) {
				err = fmt.Errorf("dict: %s: %w", path, err)
			}
		}
	}()
	h := z.Header()
	if err := checkSize(path, o.Size, h); err != nil {
		return nil, err
	}
	defer shm.CatchFault(&err, shm.GuardFaults())
	d = &Dict{
		z:           z,
		shards:      make([]shard, h.Shards),
		tallies:     make([]tallies, h.Shards),
		holds:       make([]lockHolds, h.Shards),
		mask:        uint64(h.Shards - 1),
		seed:        h.Seed,
		clock:       o.Clock,
		readOnly:    o.ReadOnly,
		lockTimeout: o.LockTimeout,
		guard:       o.GuardFaults,
	}
	if o.LockTimeout == 0 {
		d.lockTimeout = DefaultLockTimeout
	}
	if err := d.attachShards(path, h); err != nil {
		return nil, err
	}
	pages := 0
	for i := range d.shards {
		pages += len(d.shards[i].pages)
	}
	d.pageTicks = uint64(max(1, pages/pagesPerCheck))
	d.word = &stopped
	if d.clock == nil {
		d.clock, d.word = coarseclock.Now, coarseclock.Word()
	}
	if !o.ReadOnly {
		// The coarse clock's ticker adds the Dict's counts to the zone
		// (tally.go), whatever clock the Dict's TTLs use.
		coarseclock.Acquire()
		registerTallies(d)
		d.onTicker = true
	}
	return d, nil
}

// attachShards attaches the slab of each of the zone's shards and sets up
// the shard's fields. A writable Dict restores a shard whose slab header
// fails validation (reformatShard).
func (d *Dict) attachShards(path string, h shm.Header) error {
	z, readOnly := d.z, d.readOnly
	shift := uint(0)
	for 1<<shift < h.Shards {
		shift++
	}
	for i := range d.shards {
		mem := z.Shard(i)
		sh := &d.shards[i]
		*sh = shard{shardFields: shardFields{
			h:       shardHdrAt(mem),
			lockw:   &shardHdrAt(mem).Lock,
			mem:     mem,
			index:   indexSlots(mem, h.IndexSize),
			traces:  traceSlots(mem, h.IndexSize),
			arena:   mem[arenaOffset(h.IndexSize, len(mem)):],
			idxMask: uint32(h.IndexSize - 1),
			seed:    h.Seed,
			id:      i,
			shift:   shift,
			steps:   len(mem[arenaOffset(h.IndexSize, len(mem)):])/(entryHdrSize+8) + 1,
			z:       z,
			timeout: d.lockTimeout,
			tally:   &d.tallies[i],
			holds:   &d.holds[i].Holders,
		}}
		if readOnly {
			sh.lockw = new(uint64)
		}
		sl, err := slab.Attach(sh.arena)
		if err != nil && !readOnly {
			sl, err = reformatShard(z, mem, h, sh, d.lockTimeout)
		}
		if err != nil {
			z.Close()
			return fmt.Errorf("dict: %s shard %d: %w: %v", path, i, ErrCorrupt, err)
		}
		sl.Share(&d.proc)
		sl.SetOwner(z.OwnerTag())
		if !readOnly {
			sl.SetGone(z.TagReplaced)
		}
		sh.slab = sl
		if !readOnly {
			sh.pages = make([]pageTally, sl.Pages())
			sh.pagesOff, sh.pageShift = sl.PageGeometry()
		}
		d.maxEntry = sl.MaxAlloc()
	}
	return nil
}

// reformatShard restores a shard whose slab header fails validation, under
// the shard's lock: the slab's header is rewritten from the zone's geometry
// and its lists rebuilt from the page descriptors, then the shard is repaired
// from its entries; refusing the zone would lose every other shard too, and
// a zone of one shard every key.
// Another process may have restored it first; then it is attached as it is.
func reformatShard(z *shm.Zone, mem []byte, h shm.Header, sh *shard, timeout time.Duration) (*slab.Slab, error) {
	hd := shardHdrAt(mem)
	// A dead owner's lock is taken over: the shard is rebuilt anyway.
	if _, err := z.LockWithinCounted(&hd.Lock, sh.holds, timeout); err != nil {
		return nil, err
	}
	if atomic.LoadUint64(&hd.Seq)&1 == 0 {
		markOdd(&hd.Seq, 1)
	}
	defer func() {
		atomic.StoreUint64(&hd.Seq, atomic.LoadUint64(&hd.Seq)+1)
		shm.UnlockCounted(&hd.Lock, sh.holds)
	}()
	arena := mem[arenaOffset(h.IndexSize, len(mem)):]
	if sl, err := slab.Attach(arena); err == nil {
		return sl, nil
	}
	sl, err := slab.Restore(arena, h.PageSize)
	if err != nil {
		return nil, err
	}
	sh.slab = sl
	if err := sh.repairInShard(); err != nil {
		return nil, err
	}
	atomic.AddUint64(&hd.Recoveries, 1)
	return sl, nil
}

// format lays out every shard of a new zone: an empty index and slab.
func format(z *shm.Zone) error {
	h := z.Header()
	for i := 0; i < h.Shards; i++ {
		mem := z.Shard(i)
		clear(mem[:arenaOffset(h.IndexSize, len(mem))])
		if _, err := slab.Format(mem[arenaOffset(h.IndexSize, len(mem)):], h.PageSize); err != nil {
			return fmt.Errorf("dict: format shard %d: %w", i, err)
		}
	}
	return nil
}

// Close gives back the slab pages the Dict took for its own entries, and
// unmaps the zone. The file and its contents stay for other processes.
// Close must not run at the same time as other calls. Close is idempotent.
// After Close, every call returns ErrClosed.
func (d *Dict) Close() error {
	was := d.state.Swap(stateClosed)
	if was == stateClosed {
		return nil
	}
	if d.onTicker {
		unregisterTallies(d)
		coarseclock.Release()
	}
	d.guardedFlush(true)
	if was == stateOpen {
		d.guardedRelease()
	}
	return d.z.Close()
}
