package dict

// Packing: room that moves make comes before eviction.
//
// An allocation that finds no page with room of its size class, and no
// free page, may still fit once a page of another class is emptied: its
// entries moved to free chunks of other pages of their class, the page is
// free. allocInShard tries that once, before it reclaims or evicts
// anything, for SafeSet as for Set: a zone whose free bytes lie in pages
// of other sizes, as short-lived writers leave it, takes the value without
// losing a key. Packing is bounded: one page, of those slab.Packable looks
// at, and the fewest entries to move of them.

// packInShard frees a page for an allocation of size bytes that found no
// memory, evicting nothing: it moves the entries of a page that
// slab.Packable names to free chunks of other pages of their class, and
// the emptied page is free. packed is false, and nothing moved, when that
// page holds pin or anything but linked entries (a list's nodes), or when
// a writer is inside it (tryDrainPage): the move is not worth a wait. A
// process killed inside it loses nothing: Drop is dropUnreachable, as in
// allocInShard, and of the two copies repair keeps the one the index
// reaches.
func (s *shard) packInShard(size int, pin uint32) (packed bool, err error) {
	page, ok := s.slab.Packable(size)
	if !ok {
		return false, nil
	}
	var offs [maxPageChunks]uint32
	n := s.pageEntriesInShard(page, pin, &offs)
	if n < 0 {
		return false, nil
	}
	if drained, err := s.tryDrainPage(page); err != nil || !drained {
		return false, err
	}
	for _, off := range offs[:n] {
		moved, err := s.moveInShard(off, s.entryAt(off), false)
		if err != nil || !moved {
			// Packable counted room for every entry: a move without it
			// leaves those moved so far where they went.
			return false, err
		}
	}
	return true, nil
}
