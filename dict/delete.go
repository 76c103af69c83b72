package dict

import "github.com/shmzone/shmzone/shm"

// Delete removes key. Deleting an absent key is not an error.
func (d *Dict) Delete(key string) (err error) {
	if d.guard {
		defer d.catchFault(&err, shm.GuardFaults())
	}
	s, h, off, err := d.lookup(key, true)
	if err != nil {
		return err
	}
	defer d.unlock(s)
	if off == 0 {
		return nil
	}
	if err := s.removeFoundInShard(off, h, exitDeleted); err != nil {
		return d.failInShard(s, err, "remove")
	}
	d.tally(s, tWrites)
	return nil
}
