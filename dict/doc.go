// Package dict is a dictionary in a zone file that every process of a host
// maps: the semantics of nginx's ngx.shared.DICT (typed values with flags,
// atomic increments, add, compare-and-swap, lazy TTL, eviction of the least used, lists) for
// Go programs that run as several OS processes.
//
// The zone is split into shards (shm). A key's XXH3-64 hash with the zone's
// seed picks its shard by its low bits, a bucket of the shard's index by its
// high bits, and an 8-bit tag compared before the key bytes. Each shard has a
// lock word for changes to its structure, an index of uint32 offsets, an
// eviction queue (CLOCK), and a slab arena holding entries (layout.go), each
// of whose pages has a lock word of its own for writes to its entries.
// Reads take no lock; operations on different keys rarely share a cache
// line ("Who writes what", below).
//
// Eviction is CLOCK (second chance) per shard in two segments, chosen over
// exact LRU for read speed: a read at most sets a bit in the entry it
// already holds, once per pass of the hand (under its page's lock), where an
// LRU move writes three other entries' cache lines (at 1,000 keys that move
// cost a third of a Get). The queue holds, from its head, the protected
// entries, then the probation entries; new ones join probation at its head,
// unreferenced, and reads and writes set the entry's refBit. When an
// allocation finds no room, the shard first empties a page of another
// size class into free chunks of that class elsewhere (pack.go). When
// that fails it reclaims from the queue's tail, probation's oldest:
// expired entries are freed, a referenced entry loses its bit and moves
// to the head of the protected segment (a promotion), and an unreferenced
// live entry is evicted — in up to 30 rounds of up to 3 freed entries
// (nginx's bound). The protected segment holds at most seven
// eighths of the entries (its last entry is demoted to probation, or gets
// a second chance if referenced), and its live entries are evicted, CLOCK
// again, only when no probation entry is left and none of its own has
// expired. An expired protected entry is otherwise kept: it is the slot of
// a key in use whose state ran out (a rate limiter's window ended), which
// the key's next write takes back in place, protected still, where a new
// entry would start in probation and a flood would evict it before its
// next use; unused, such entries are the first the cap demotes, and
// probation reclaims them first. So a key used since the hand last passed outlives
// one that was not, a key used twice outlives a flood of keys used once
// (a rate limiter's clients under an address flood), and with Shards: 1
// the zone has one eviction order. Keys lists each shard's queue from the
// tail: probation's oldest first, the protected last.
//
// A live entry evicted leaves a trace in its shard (traces.go): a
// fingerprint of its key's hash. A shard keeps the traces of about its last
// traceBuckets×traceBucket live evictions, in a twentieth of its bytes. A
// new key that finds its trace was in use before a flood evicted it. Its
// new entry joins the protected segment at its tail, unreferenced: the cap
// demotes it first unless it is used again. So a client whose first
// request came during a flood is kept from its second on, while keys that
// come back once displace no entry in use. The key also lost what it held
// if its entry would still be live: Outcome.Lost, Stats.Lost. DESIGN.md
// gives the reasons and the sizes.
//
// Protected entries stay where they were allocated, so they keep slab pages
// of their size from being freed; when three rounds free no chunk of the
// size an allocation needs, the shard clears the page of probation's
// oldest entry: it evicts the page's entries not used, and moves the others
// (the index and queue then point to the copy, which keeps its place) to
// chunks of their size in other pages, evicting from probation's tail to
// make room there. A clearing that fails (a used entry finds no room) is
// tried again every three rounds, on the page of the tail of then.
//
// # Differences from ngx.shared.DICT
//
//   - The zone is a file. Any process may open it, and it outlives them.
//   - Numbers are int64 or float64; nginx stores every number as a double.
//     An int's Incr wraps on overflow.
//   - An absent key is ErrNotFound where nginx returns nil.
//   - The zero Value is ErrBadValue. nginx's set of nil deletes the key.
//   - A value too large for any shard is refused before anything is evicted.
//     nginx evicts, then fails with "no memory" and forcible true.
//   - TTL of an expired key not yet reclaimed is ErrNotFound. nginx returns
//     a negative time.
//   - Expire of an expired key is ErrNotFound. nginx's expire revives it.
//   - A TTL is rounded up to a whole millisecond. nginx truncates it, so an
//     exptime under 1 ms never expires there.
//   - Eviction is CLOCK in two segments per shard, not one LRU per zone.
//     A read sets a bit and moves no entry.
//   - FlushAll frees every entry. nginx marks them expired, and get_stale
//     still returns them.
//   - Keys(0) lists every key; there is no default of 1024. It lists shard
//     by shard, oldest first. nginx lists the most recently used first.
//   - FreeSpace counts the free chunks of partly used pages too. nginx's
//     free_space counts free pages only.
//   - A list element may be a bool. nginx's lists take strings and numbers.
//   - Reads take no lock. A write locks one shard, not the whole zone.
//   - A wait for a lock ends after Options.LockTimeout with ErrLockTimeout.
//   - A process that dies holding a lock loses at most the entry it wrote.
//     The next locker repairs the shard.
//   - Added: Update, Mutate, CompareAndSwap, IncrFloat, IncrInitNum,
//     GetInto, LRange, SetList, Scan, Check, Repair, Stats and read-only
//     views.
//
// Invariants:
//
//	I1. Every entry of a shard is in exactly one bucket chain (the one its hash
//	    names) and in the eviction queue (the eviction queue of layout.go), once;
//	    Count is their number.
//	I2. An entry occupies one slab chunk of exactly ChunkSize(entrySize(key,
//	    value)) bytes; a list's nodes are chunks reachable only from its header.
//	I3. A failed write leaves the key's old value in place.
//	I4. An entry is expired iff its expiry is non-zero and now >= expiry;
//	    expired entries are invisible to reads but for GetStale.
//	I5. Every link read from the zone is bounds-checked before it is followed,
//	    and every walk is bounded: a corrupt zone yields ErrCorrupt, never a
//	    fault or an endless loop.
//	I6. Drop is dropNone outside multi-step mutations. While one runs it names
//	    what a repair must drop: the entry being written, or, during an
//	    allocation, every entry the index does not reach. A process that dies
//	    holding a shard's lock loses at most that entry; the next locker
//	    rebuilds the shard (repair.go). An increment of a live integer is one
//	    aligned store and is never lost or half done.
//
// User code: Update and Mutate call the caller's fn with the shard's lock
// held and a view of the zone: Update's cur aliases the entry's value, and
// Mutate's b is the value itself. Every slice of zone memory the package
// hands out, there or in a returned Value, is capped (s[i:j:j]), so an
// append to it copies instead of writing over the next entry. If fn panics
// or calls runtime.Goexit, the operation is undone before the panic goes on,
// unrecovered, to the caller: Update has written nothing yet, Mutate puts a
// found entry's bytes back and removes a new entry; then the lock is
// released. The zone stays sound and the process may go on using it.
//
// # Who writes what
//
// Each operation writes the lines of its own key and nothing of the
// shard's, so processes share cache lines where they share keys, and
// otherwise only where their entries sit side by side (the page a process's
// very first entry goes to, which others fill; after it, while free pages
// last, a process takes pages of its own). Entries that one process made
// and others use, as after a restore from a snapshot, a restart of the
// processes, or once clients move between processes, sit side by side in
// that process's pages, and their writers share the pages' lock words too.
// Together they then run slower than one, and a lock of each entry's own
// would not help much, as the entries share cache lines as well. So a
// process that keeps writing entries in place in pages it did not take
// moves them, one at a time, to pages of its own (own.go). It moves at
// most one entry per shard and millisecond in all processes together. It
// never waits for a lock and never moves in a full zone. Stats.Moves
// counts the moves. Such entries are then its own as those it made
// (DESIGN.md, section 4, gives the runs). Line by line:
//
//	shard header, line 0    Lock, Seq, Drop, queue ends, Count, structural counts
//	                        written only by structural changes, under Lock;
//	                        read (Seq) by every operation: it stays in every
//	                        core's cache while the structure does not change
//	shard header, line 1    Hits, Misses, Writes, Incrs: each process adds its
//	                        own counts now and then (tally.go), never per op;
//	                        Lost, ProtTail, ProtCount, TraceGen, MovedAt,
//	                        Moves: under Lock
//	shard header, 2..4      the traces' generations: under Lock
//	traces                  written by evictions and by new keys, under Lock
//	index slots             written by inserts and deletes, under Lock
//	slab page, first word   the page's lock (slab.PageLock): an entry writer's
//	                        CAS; each process fills pages of its own
//	                        (slab: ownPage), so its entries' locks are its own.
//	                        A free page's: slab.FreeWord, written under Lock
//	                        as the page is freed, zeroed by the Alloc that
//	                        takes it again; no CAS of a lock succeeds on it
//	slab page descriptor    written under Lock; names the zone that took the
//	                        page (shm.Zone.OwnerTag) until it is freed or
//	                        left (release.go): what slab.Mine reads,
//	                        without a lock, for the moves
//	entry                   Next, QPrev, QNext: under Lock. Ver (version and
//	                        expiry), Flags, Bits' kind, the value: under the
//	                        page lock, or under Lock after draining the page.
//	                        refBit: set with an atomic OR when clear
//
// # Pages of processes that leave
//
// A process holds at most three slab pages with room per size class and
// shard: the one it fills, and two it removed entries from, to fill next.
// A full page that has an entry removed is left to all otherwise. Close
// gives the Dict's pages back. A process killed, or gone without Close,
// leaves its name in its pages. They are taken back once its owner slot
// is claimed again. They are also taken back by each Dict at its first
// allocation in the shard, which asks the kernel who is gone. A process
// that needs a page fills the room of those given back before it takes a
// free page. It fills the room of any page of the size class, and then
// packs one of another class, before it evicts or reports ErrNoMemory.
// Stats.HeldPages counts the pages live processes hold, and
// Stats.StrandedBytes the free bytes of pages in use (release.go).
//
// Three kinds of operation:
//
//	reader        Get, GetInto, GetStale (and a read-only view's reads):
//	              seq = Seq (retry while odd); walk the bucket, reading every
//	              word atomically and every offset bounds-checked (a walk
//	              longer than the shard holds ends it); copy Ver, the value,
//	              Flags; valid only if Ver is even and unchanged and Seq is
//	              unchanged. Writes nothing in the zone.
//	entry writer  a write that leaves a live entry its length (inplace.go):
//	              Incr, IncrFloat, IncrInit, Mutate, and Set, Replace,
//	              CompareAndSwap and Update of a value of the same length
//	              (not a list), Expire; Add of a live key (ErrExists).
//	              Find as a reader; then, with Seq still seq, CAS the
//	              page's lock word (TryLock; a page another writer holds
//	              is watched, with backoff, for up to pinSpins looks at its
//	              word and Seq, never at the entry, and never waited on
//	              beyond them), and check Seq again: the entry is the
//	              key's and stays so until the page is unlocked. An int's
//	              increment, and a number written over a number of its
//	              kind, expiry and flags, is one aligned store; a change
//	              of several words makes Ver odd around it. What
//	              needs more (a new key, another length, a removal) unlocks
//	              the page and goes structural; Update then calls its fn
//	              again, under Lock, with the value as it then is.
//	structural    everything else: takes Lock (Seq odd), drains the page of
//	              each existing entry it changes (locks and unlocks it: the
//	              writers inside finish; no new one validates while Seq is
//	              odd), and of each it judges by what writers write (the
//	              hand's look at expiry and refBit) before it reads it,
//	              changes, and leaves Seq even again at unlock.
//
// Retry rules: a reader or an entry writer retries a find that met an odd
// Seq, a torn walk or a page lock held, up to 8 times (yielding between),
// then takes Lock and does the operation as a structural one, which waits
// its turn with LockTimeout's bound. A reader that met an odd Ver retries
// the same way; under Lock, after draining, an odd Ver is a writer that
// died mid-write, and its entry is dropped by a repair (I6).
//
// Memory order: readers and entry writers load every word of the zone they
// use without a lock with sync/atomic. That covers Seq, Ver, links, and key
// and value bytes, loaded 8 bytes at a time (layout.go). A writer makes Seq
// or Ver odd with an atomic add before it writes (markOdd). It makes the
// word even with an atomic store after it writes, and releases locks with
// atomic stores. A reader that loads the same even word before and after
// its data loads saw no store of a write in progress:
//   - amd64: TSO keeps loads in order and stores in order, and the add is
//     a full barrier.
//   - arm64: Go's atomic loads are load-acquire (LDAR), and no later load
//     is satisfied before one. So the data loads are satisfied before the
//     validating load of Ver or Seq. The atomic store is a store-release
//     (STLR): the writer's stores are seen before it. markOdd loads the
//     word again after its add. Without LSE atomics the add ends in a
//     store-release, which a later store may pass; no access passes a
//     load-acquire that follows a store-release.
//
// These paths run under the race detector too. The detector does not watch
// the zone's mapping, so it checks the process's own state.
//
//	I7. Seq is odd exactly while Lock is held by a writable Dict (or was held
//	    by a process that died). A structure read without Lock is used only
//	    if Seq was even before and unchanged after.
//	I8. An existing entry's Ver, Flags, kind and value change only under its
//	    page's lock, or under Lock after its page was drained; its key, Tag,
//	    KLen and place never change while it is linked, but that a page
//	    clearing, a packing or a move to its writer's pages moves it,
//	    under Lock after draining its page: the copy takes its place in
//	    the index and the queue, and the old chunk is freed.
//	I9. A page's first word is its lock while the page holds chunks of a
//	    class or begins a run; Alloc zeroes it when it gives the page that
//	    role. A free page's first word is slab.FreeWord once the page was
//	    ever taken (the slab writes it as it frees the page, under Lock,
//	    after the drain), which no lock's compare-and-swap accepts. An
//	    entry writer swaps the word only after validating, against Seq
//	    loaded right before the swap, that the entry it found was linked
//	    in that page, and validates again after: if the shard changed in
//	    between it gives the word back only if it still holds its own swap
//	    (shm.Zone.Unswap). Its owner word is that of its process, the same
//	    for all the process's goroutines, so a swap made on a freed page
//	    and given back after the page was taken again could release a
//	    sibling's lock on it: FreeWord makes that swap fail. What this
//	    leaves open: a writer stalled between its check and its swap (a
//	    few instructions) for as long as other processes free the entry's
//	    page and take it again inside a run, after its first page, whose
//	    first word is then a value's bytes and happens to be zero, swaps
//	    that word and restores it at once (no lock of that page exists to
//	    be released: a run's lock is its first page's). A reader copying
//	    that value in that instant sees it torn, and so does a read of it
//	    under Lock (a copy, a snapshot, Update's cur), which drains the
//	    run's first page only and is not ordered with the swap; a write of
//	    the word in that instant stands, as the give-back then finds the
//	    word no longer its own. Every other interleaving is validated.
//	I10. The queue's first ProtCount entries from its head, and only they,
//	    have protBit, and ProtTail is the last of them (0 when none);
//	    protBit, ProtTail and ProtCount change only under Lock. A repair
//	    clears them all: every entry starts again in probation.
//
// Concurrency: a *Dict is safe for use by many goroutines; Close must not race
// with other calls. Across processes, every operation on a key is atomic:
// under its shard's lock, or under its entry's page lock for an entry
// write; a read sees the last completed write of any process. A
// lock holder that is alive, in any PID namespace, is never taken over:
// liveness is the kernel's (an OFD lock per open zone, package shm), never a
// pid's. No operation waits forever: one that waited Options.LockTimeout
// (DefaultLockTimeout, 1 s) for a lock a live process holds returns
// ErrLockTimeout and changes nothing, and a lock whose holder died is taken
// over after a few milliseconds whatever the timeout. So is a lock word
// equal to the Dict's own owner word that none of its goroutines holds,
// which only damage to the zone writes: a Dict counts its holds of each
// shard's lock, and marks the pages its entry writers hold (pin.go). The
// clock is read only for entries that have or get a TTL, from a coarse
// per-process clock (clock.go) unless Options.Clock injects one: a
// goroutine stores the time every millisecond while the clock is read, and
// stops once it has gone unread for 100 to 200 ms, so that an idle process
// does not wake; the first read after that takes the system's time and
// restarts it. Read-only views take no locks (see Options.ReadOnly) and
// hold no owner slot.
package dict
