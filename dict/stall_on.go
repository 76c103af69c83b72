//go:build dictstall

package dict

// stall calls stallHook, when a test set it (stall.go).
func stall(at stallPoint) {
	if h := stallHook; h != nil {
		h(at)
	}
}

// stallHook is set by a test before the goroutines it stalls start, and
// cleared after they end.
var stallHook func(stallPoint)
