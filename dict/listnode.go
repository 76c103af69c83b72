package dict

import (
	"errors"
)

// abandonChainInShard frees the nodes from first that SetList built and
// cannot use, with Drop dropUnreachable, and returns err. A corrupt arena is
// repaired instead, which frees them too.
func (d *Dict) abandonChainInShard(s *shard, first uint32, err error) error {
	switch {
	case errors.Is(err, ErrCorrupt): // storeInShard repaired the shard
		return err
	case err == errCorruptArena:
		return d.corruptInShard(s, "alloc")
	}
	if s.freeChainInShard(first) != nil {
		return d.corruptInShard(s, "list free")
	}
	s.hdr().Drop = dropNone
	return err
}

// putNodeInShard writes an unlinked node holding v into the chunk at noff,
// which allocInShard returned for nodeHdrSize+v.Len() bytes.
func (s *shard) putNodeInShard(noff uint32, v Value) *node {
	n := s.nodeAt(noff)
	*n = node{VLen: uint32(v.Len()), Kind: uint8(v.kind)}
	data, _ := s.nodeData(noff, n)
	putNode(data, v)
	return n
}

// freeNodesInShard frees every node of a list entry and empties it.
func (s *shard) freeNodesInShard(off uint32, e *entry) error {
	if e.VLen != uint32(listHdrSize) || !s.okBytes(off, e) {
		return errCorruptArena
	}
	l := s.listOf(off, e)
	if err := s.freeChainInShard(l.Head); err != nil {
		return err
	}
	*l = listHdr{}
	return nil
}

// freeChainInShard frees the nodes linked by Next from n.
func (s *shard) freeChainInShard(n uint32) error {
	for steps := 0; n != 0; steps++ {
		if !s.okNode(n) || steps > s.maxSteps() {
			return errCorruptArena
		}
		next := s.nodeAt(n).Next
		if err := s.slab.Free(n); err != nil {
			return errCorruptArena
		}
		n = next
	}
	return nil
}

// copyListInShard appends a list entry's record r and then its elements.
func (s *shard) copyListInShard(off uint32, e *entry, r copyRec, c *copyBuf) bool {
	l := s.listOf(off, e)
	at := len(c.recs)
	stored := c.add(s.keyOf(off, e), nil, r)
	n := 0
	for no := l.Head; no != 0; no = s.nodeAt(no).Next {
		if !s.okNode(no) || n >= s.maxSteps() {
			return false
		}
		nd := s.nodeAt(no)
		data, ok := s.nodeData(no, nd)
		if !ok {
			return false
		}
		v, ok := nodeValue(Kind(nd.Kind), data)
		if !ok {
			return false
		}
		c.add(nil, v.b, copyRec{kind: v.kind, num: v.num})
		n++
	}
	if n != int(l.Len) {
		return false
	}
	if stored && !c.full {
		c.recs[at].elems = n
	}
	return true
}
