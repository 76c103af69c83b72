//go:build !dictstall

package dict

// stall does nothing in a build without the dictstall tag (stall.go).
func stall(stallPoint) {}
