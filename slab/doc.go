// Package slab allocates chunks from one fixed region of bytes, such as a
// shard of a zone file that many processes map. Sizes up to 2040 bytes
// take a chunk of one of 48 size classes. A chunk is carved from a page
// that holds chunks of its class only, with a bitmap of the chunks in use.
// Larger sizes take a run of whole pages.
//
// Every page starts with PageHdr bytes that no chunk covers: its lock word
// (PageLock). The Alloc that takes a page zeroes that word, and freeing
// the page writes FreeWord.
//
// Everything lives in the region, as offsets, never pointers (layout.go).
// The region holds a header, a list head per class, a descriptor per page,
// then the pages. A *Slab is only a view of the region's geometry. So any
// number of views in any number of processes may attach the same region.
// Alloc returns an offset relative to the region. Offset 0 is the header,
// never a chunk, so callers may use 0 as nil.
//
// Each view fills pages of its own, so the chunks of different processes
// share no page. A page a view takes names the view's owner in its
// descriptor (SetOwner) until it is freed or left. Mine tells a view's own
// pages by it, in any process. AllocOwn allocates from them alone.
//
// Pages never stay with a view that has left (owners.go). Release makes
// the pages of the owners it is given name no owner. HeldPages counts the
// pages that name live owners. StrandedBytes counts the free chunks of
// pages in use. Packable names a page whose chunks fit in the free chunks
// of the other pages of its class (pack.go). DESIGN.md gives the order in
// which a view takes pages, and the reasons for these rules.
//
// Format lays out an empty region. Attach checks a region's geometry
// against its length, and returns a view without reading the rest. Alloc,
// Free and Size check the links and offsets they follow. They return
// ErrCorrupt for one out of place. Check verifies the whole region.
// Rebuild recomputes its lists and counts from the descriptors. Restore
// also rewrites an overwritten header (repair.go).
//
// Invariants, which Check verifies:
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
// The bitmaps and the runs' descriptors alone record which chunks are
// allocated. Rebuild derives the lists and counts from them again.
//
// Concurrency: the package does no locking. The caller serialises calls on
// one region, across goroutines and across processes alike. Only the
// geometry methods PageSize, Pages, Capacity, MaxAlloc and ChunkSize, and
// Mine, a hint, need no lock. Package dict calls the others under the
// shard's lock, and calls Rebuild in the repair of a shard whose lock it
// took over from a dead process.
package slab
