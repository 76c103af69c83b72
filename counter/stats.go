package counter

// Stats are a Counter's figures since New, for this process only.
type Stats struct {
	Syncs     uint64 // syncs run: by hand, by the timer and by Close
	Writes    uint64 // deltas written to the dict
	Failures  uint64 // deltas whose write failed: kept for the next sync, or dropped
	Dropped   uint64 // of Failures, deltas dropped because the dict can never hold their key
	Pending   int    // keys whose delta the last sync failed to write and kept
	Keys      int    // keys the Counter holds in memory
	Retired   uint64 // idle keys dropped from memory
	LastError error  // the last sync's error; nil when it wrote everything
}

// Stats returns the Counter's figures. It waits for a Sync in progress.
func (c *Counter) Stats() Stats {
	c.syncMu.Lock()
	st := c.st
	c.syncMu.Unlock()
	c.idx.mu.Lock()
	st.Keys = c.idx.lenLocked()
	c.idx.mu.Unlock()
	return st
}
