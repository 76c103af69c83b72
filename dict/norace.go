//go:build !race

package dict

// optimistic enables the reads and entry writes that take no shard lock
// (pin.go).
const optimistic = true
