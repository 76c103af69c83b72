package dict

import "github.com/shmzone/shmzone/shm"

// Pages of processes that are gone.
//
// Each process fills slab pages of its own (slab: ownPage), and holds at
// most three pages with room per size class and shard (slab: leave). What
// it holds goes back to the others as it leaves:
//   - Close makes the pages of the Dict name no owner (releaseAll), in
//     each shard it allocated in;
//   - a process killed, or gone without Close, leaves its tag in its
//     pages. A view that looks for a page takes over one whose tag's slot
//     was claimed since (shm.Zone.TagReplaced, a load); and each Dict, at
//     its first allocation in a shard, releases there the pages of every
//     owner the kernel says is gone (sweepInShard, shm.Zone.TagGone).
//
// A page that names no owner, or a gone one, is taken over by the next
// process that needs a page of its class, before any free page. So
// processes that come and go fill the pages of those before them.
// slab/DESIGN.md gives the reasons.

// sweepInShard, at this Dict's first allocation in the shard, releases the
// shard's pages that name an owner gone: one whose slot was claimed since,
// or that nobody holds as the kernel says (one system call per owner
// whose slot's generation still names it). It walks every page
// descriptor of the shard, once per Dict. It marks the shard as one this
// Dict may hold pages in, for Close.
func (s *shard) sweepInShard() {
	if s.swept.Load() {
		return
	}
	s.swept.Store(true)
	s.slab.Release(goneTags(s.z))
}

// goneTags returns a test of whether an owner tag names a zone gone, which
// asks the kernel once per tag at most.
func goneTags(z *shm.Zone) func(tag uint32) bool {
	seen := map[uint32]bool{}
	return func(tag uint32) bool {
		if z.TagReplaced(tag) {
			return true
		}
		gone, ok := seen[tag]
		if !ok {
			gone = z.TagGone(tag)
			seen[tag] = gone
		}
		return gone
	}
}

// releaseAll makes the pages this Dict holds name no owner, as it closes:
// in each shard it allocated in (swept), under the shard's lock. It waits
// for one lock until it times out (LockTimeout); after a wait that timed out it skips
// the shards whose lock is busy. Pages it skips are released later by
// another process, which finds their owner gone (sweepInShard).
func (d *Dict) releaseAll() {
	if d.readOnly || !d.proc.Allocated() {
		return
	}
	tag := d.z.OwnerTag()
	mine := func(t uint32) bool { return t == tag }
	wait := true
	for i := range d.shards {
		s := &d.shards[i]
		if !s.swept.Load() {
			continue
		}
		if wait {
			if d.lock(s) != nil {
				wait = false
				continue
			}
		} else if d.z.TryLockCounted(s.lockw, s.holds) {
			d.beginChange(s)
		} else {
			continue
		}
		s.slab.Release(mine)
		d.unlock(s)
	}
}

// guardedRelease is releaseAll under Options.GuardFaults, as guardedFlush.
func (d *Dict) guardedRelease() {
	if !d.guard {
		d.releaseAll()
		return
	}
	var err error
	defer d.catchFault(&err, shm.GuardFaults())
	d.releaseAll()
}

// liveTags returns a test of whether an owner tag names a zone still open,
// which asks the kernel once per tag at most: for Stats.
func liveTags(z *shm.Zone) func(tag uint32) bool {
	gone := goneTags(z)
	return func(tag uint32) bool { return !gone(tag) }
}
