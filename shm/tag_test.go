package shm

import (
	"testing"
)

// TestTagGone: a zone's tag is live while it is open, in every zone's
// view, and gone once it closes; TagReplaced tells only once its slot is
// claimed again. A tag naming no slot is gone.
func TestTagGone(t *testing.T) {
	path := tempZone(t)
	a := mustOpen(t, path, small)
	b := mustOpen(t, path, Options{})
	ro := mustOpen(t, path, Options{ReadOnly: true})
	tag := b.OwnerTag()
	for _, tt := range []struct {
		name string
		z    *Zone
	}{{"itself", b}, {"another", a}, {"read-only", ro}} {
		if tt.z.TagReplaced(tag) || tt.z.TagGone(tag) {
			t.Errorf("%s: TagReplaced %t, TagGone %t for an open zone's tag, want false, false", tt.name, tt.z.TagReplaced(tag), tt.z.TagGone(tag))
		}
	}
	for _, bad := range []uint32{0, 1<<slotBits | Slots, 1<<slotBits - 1} {
		if !a.TagReplaced(bad) || !a.TagGone(bad) {
			t.Errorf("tag %#x names no slot: TagReplaced %t, TagGone %t, want true, true", bad, a.TagReplaced(bad), a.TagGone(bad))
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if a.TagReplaced(tag) || !a.TagGone(tag) || !ro.TagGone(tag) {
		t.Errorf("closed zone's tag: TagReplaced %t, TagGone %t (read-only %t), want false, true, true", a.TagReplaced(tag), a.TagGone(tag), ro.TagGone(tag))
	}
	c := mustOpen(t, path, Options{})
	if c.own.slot != 1 || !a.TagReplaced(tag) || !a.TagGone(tag) || c.TagGone(c.OwnerTag()) || a.TagGone(c.OwnerTag()) {
		t.Errorf("slot %d claimed again: old tag replaced %t gone %t; new tag gone %t (from a %t), want slot 1, true, true, false, false",
			c.own.slot, a.TagReplaced(tag), a.TagGone(tag), c.TagGone(c.OwnerTag()), a.TagGone(c.OwnerTag()))
	}
}

// TestTagGoneKilled: the tag of a zone whose process was SIGKILLed is
// gone, though its slot's generation still names it.
func TestTagGoneKilled(t *testing.T) {
	path := tempZone(t)
	z := mustOpen(t, path, small)
	cmd, word, _ := startLocker(t, path)
	tag := ownerTag(int(uint32(word)), uint32(word>>32))
	if z.TagReplaced(tag) || z.TagGone(tag) {
		t.Fatalf("live child's tag %#x: TagReplaced %t, TagGone %t, want false, false", tag, z.TagReplaced(tag), z.TagGone(tag))
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if z.TagReplaced(tag) || !z.TagGone(tag) {
		t.Fatalf("killed child's tag %#x: TagReplaced %t, TagGone %t, want false, true", tag, z.TagReplaced(tag), z.TagGone(tag))
	}
}
