package dict

import (
	"sync"
	"sync/atomic"
	"time"
)

// The coarse clock: one goroutine per process stores the Unix time in
// milliseconds every millisecond while at least one Dict without an injected
// clock is open, so that an operation reads the time with one atomic load
// instead of a time.Now call that costs more than the operation (as nginx
// caches its time once per event-loop turn). It is read only when an entry
// has or gets a TTL.
var coarse struct {
	now  atomic.Int64
	mu   sync.Mutex
	refs int
	stop chan struct{}
	done chan struct{}
}

func coarseNow() int64 { return coarse.now.Load() }

// acquireClock starts the coarse clock, or counts one more user of it.
func acquireClock() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.refs++
	if coarse.refs > 1 {
		return
	}
	coarse.now.Store(time.Now().UnixMilli())
	stop, done := make(chan struct{}), make(chan struct{})
	coarse.stop, coarse.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				coarse.now.Store(time.Now().UnixMilli())
			case <-stop:
				return
			}
		}
	}()
}

// releaseClock stops the coarse clock when its last user goes.
func releaseClock() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.refs--
	if coarse.refs > 0 {
		return
	}
	close(coarse.stop)
	<-coarse.done
}
