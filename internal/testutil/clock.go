package testutil

import (
	"sync/atomic"
	"time"
)

// EpochMilli is where every Clock starts, in Unix ms. It is a fixed instant
// in the past. A TTL measured on a Clock has long run out on the system
// clock. Times since the Unix epoch have the magnitude they have in
// production.
const EpochMilli int64 = 1_700_000_000_000

// Epoch is EpochMilli as a time.Time.
var Epoch = time.UnixMilli(EpochMilli)

// Clock is the tests' fake clock. It reads Epoch until the test moves it
// with Set, SetMilli or Advance. It never moves on its own. Its zero value
// is ready to use. A Clock is safe for concurrent use. One goroutine may
// move it while others read it.
//
// Its views are what the code under test takes. UnixMilli is a
// dict.Options.Clock. Now is a time source such as redistier.Options.Now.
type Clock struct {
	off atomic.Int64 // ns after Epoch
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return Epoch.Add(c.Since()) }

// UnixMilli returns the clock's time in Unix ms, rounded down.
func (c *Clock) UnixMilli() int64 { return c.Now().UnixMilli() }

// Since returns how far the clock is from Epoch.
func (c *Clock) Since() time.Duration { return time.Duration(c.off.Load()) }

// Set puts the clock at d after Epoch (before it when d is negative).
func (c *Clock) Set(d time.Duration) { c.off.Store(int64(d)) }

// SetMilli puts the clock at ms milliseconds after Epoch.
func (c *Clock) SetMilli(ms int64) { c.Set(time.Duration(ms) * time.Millisecond) }

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) { c.off.Add(int64(d)) }
