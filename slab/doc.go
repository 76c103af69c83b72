// Package slab allocates chunks from one fixed region of bytes, such as a
// shard of a zone file that many processes map. Sizes up to 2040 bytes take
// a chunk of one of 48 size classes, carved from a page that holds chunks of
// that class only (at least two), with a bitmap of the chunks in use; larger
// sizes take a run of whole pages. Every page starts with PageHdr bytes that
// no chunk covers, its lock word (PageLock); a run's chunk starts after its
// first page's. Freed pages merge with their free neighbours. A page's
// first word is written only by the Alloc that takes the page for a class
// or as a run's first page, which zeroes it, and as the page is freed
// (Free, Rebuild, Format of a region in use), which writes FreeWord: a
// free page's word is no lock a stale compare-and-swap can take. Format
// does not touch the pages of a new region, whose words stay as the file
// holds them.
//
// Everything lives in the region, as offsets, never pointers (layout.go): a
// header, a list head per class, a descriptor per page, then the pages. A
// *Slab is only a view of the region's geometry, so any number of views in
// any number of processes may attach the same region. Alloc returns an
// offset relative to the region; offset 0 is the header, never a chunk, so
// callers may use 0 as nil.
//
// Each view fills pages of its own (ownPage): once it has allocated, its
// next chunks of a class come from a page it takes for itself, so that the
// chunks of different processes share no page. A page a view takes names
// the view's owner in its descriptor (SetOwner) until it is freed or left;
// Mine tells a view's own pages by it, in any process, and AllocOwn
// allocates from them alone: where a chunk that another view allocated
// moves to when this view writes it (package dict).
//
// Pages never stay with a view that has left (owners.go). A view whose
// Alloc needs a page of a class takes, in this order:
//   - the page of the class it fills, while it has a free chunk;
//   - a page of its own with a free chunk that it holds in a slot (leave);
//   - a page of the class with a free chunk that names the view, no owner,
//     or an owner gone (SetGone), among the first of the class's list;
//   - a free page, while one is left;
//   - any page of the class with a free chunk, whoever holds it.
//
// A full page that has a chunk freed names no owner from then on, unless
// its owner freed it and fills it, or holds it in one of two slots. So a
// view holds at most three pages with room per class: the one it fills
// and two it fills next. Release makes the pages of the
// owners it is given name no owner: package dict releases a Dict's pages
// as it closes, and those of owners gone. HeldPages counts the pages that
// name live owners, and StrandedBytes the free chunks of pages in use.
// Packable names a page whose chunks fit in the free chunks of the other
// pages of its class (pack.go): moved there, they leave it free.
// DESIGN.md gives the reasons for these rules.
//
// Format lays out an empty region; Attach checks a region's geometry (magic,
// page size, page count and offset of page 0 against its length) and
// returns a view without reading the rest. Alloc, Free and Size check the
// links and offsets they follow and return ErrCorrupt for one out of place.
// Check verifies the whole region; Rebuild recomputes its lists and counts
// from the descriptors, and Restore also rewrites an overwritten header
// (repair.go).
//
// Invariants, which Check verifies, returning the first one broken wrapped
// in ErrCorrupt:
//
//	I1. Every page belongs to exactly one of: a small page (chunks of one
//	    class), an allocated run, a free run. A run's first page records its
//	    length, which ends inside the region; the other pages of an
//	    allocated run name its first page; the inner pages of a free run
//	    are marked inner, and its last page names its first.
//	I2. A small page's bitmap has no bit set past its last chunk, and its
//	    Used count equals the bits set and is never 0: a page whose last
//	    chunk is freed becomes a free page.
//	I3. A small page is linked in its class's list exactly when it has a
//	    free chunk, and a class's list holds only small pages of that class.
//	I4. Every free run is linked in the free-run list, which holds only the
//	    first pages of free runs. An allocated run is in no list.
//	I5. Every list is sound: its links are in range, it has no cycle, each
//	    page's Prev names the page before it (0 at the head), and no page is
//	    linked twice, in one list or in two.
//	I6. Free runs are maximal: a free run is never followed by another.
//	I7. The header's FreePages is the number of pages in free runs, and its
//	    FreeBytes the bytes of those pages plus those of the free chunks of
//	    small pages.
//
// The bitmaps and the runs' descriptors are the only record of which chunks
// are allocated; Rebuild keeps what they record and derives the lists and
// counts from it again, which repairs a region whose writer died in the
// middle of Alloc or Free.
//
// Concurrency: the package does no locking. Format, Attach, Restore and
// every method but PageSize, Pages, Capacity, MaxAlloc, ChunkSize (which
// read only the view's immutable geometry) and Mine (a hint that reads
// a descriptor without the lock) read or write the region, and
// the caller serialises them on one region, across goroutines and across
// processes alike.
// Package dict makes them only under the shard's lock (shm.Lock on a word
// in the shard, shared by every process that writes the zone), and calls
// Rebuild in the repair of a shard whose lock it took over from a dead
// process. A read-only dict cannot write that word: it serialises its own
// goroutines only, and may read a region that a writer is changing.
package slab
