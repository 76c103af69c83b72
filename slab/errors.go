package slab

import "errors"

var (
	// ErrNoMemory is returned when no free chunk or page run can hold a size.
	ErrNoMemory = errors.New("slab: no memory")
	// ErrTooLarge is returned when a size exceeds what the empty region holds.
	ErrTooLarge = errors.New("slab: size larger than the region")
	// ErrCorrupt is returned when the region's metadata is inconsistent, or an
	// offset given to Free or Size is not an allocated chunk.
	ErrCorrupt = errors.New("slab: corrupt region")
	// ErrBadRegion is returned by Format and Attach for a region too small or
	// of another format.
	ErrBadRegion = errors.New("slab: bad region")
)
