package dict

import "github.com/shmzone/shmzone/shm"

// The zone's registry (shm registry.go) holds a few records that no
// eviction reaches. The limiters keep there the limits an operator sets
// live. These methods pass it through.

// Generation returns the zone registry's generation, which every change of
// a record moves. It is one atomic load, and 0 once d is closed.
func (d *Dict) Generation() uint64 { return d.z.Generation() }

// BumpGeneration moves the registry's generation, so that readers of what
// it guards read again. It returns ErrClosed after Close and ErrReadOnly
// for a read-only view.
func (d *Dict) BumpGeneration() error {
	if err := d.writable(); err != nil {
		return err
	}
	return d.z.BumpGeneration()
}

// LoadRecord returns a consistent copy of the registry's record of key,
// and whether there is one. It works on a read-only view. It returns
// ErrClosed after Close.
func (d *Dict) LoadRecord(key uint64) (shm.Record, bool, error) {
	if err := d.usable(); err != nil {
		return shm.Record{}, false, err
	}
	r, ok := d.z.LoadRecord(key)
	return r, ok, nil
}

// Records returns a consistent copy of each record of the registry. It
// returns ErrClosed after Close.
func (d *Dict) Records() ([]shm.Record, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	return d.z.Records(), nil
}

// UpdateRecord stores under key what fn makes of its record, under the
// registry's lock (shm.Zone.UpdateRecord). It returns ErrClosed after
// Close, ErrReadOnly for a read-only view, and an error wrapping
// shm.ErrRegistryFull when every record holds another key.
func (d *Dict) UpdateRecord(key uint64, fn func(data *[shm.RecordWords]uint64, found bool) bool) error {
	if err := d.writable(); err != nil {
		return err
	}
	return d.z.UpdateRecord(key, fn)
}

// DeleteRecord frees the registry's record of key and reports whether
// there was one. It returns ErrClosed after Close and ErrReadOnly for a
// read-only view.
func (d *Dict) DeleteRecord(key uint64) (bool, error) {
	if err := d.writable(); err != nil {
		return false, err
	}
	return d.z.DeleteRecord(key)
}
