package limiter

import "sync"

// bufSize is the largest value a limiter writes through dict.Update but for
// leased Conn records: a sliding window's state.
const bufSize = swSize

// bufs holds the buffers limiters build new values in. A value given to
// dict.Update must outlive fn's return, so a buffer on fn's caller's stack
// would escape to the heap: one allocation per decision. A pooled buffer
// costs none once the pool is warm.
var bufs = sync.Pool{New: func() any { return new([bufSize]byte) }}
