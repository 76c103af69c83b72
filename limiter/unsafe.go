package limiter

import "unsafe"

// bytesString returns b's bytes as a string without a copy. The string
// aliases b: b must not change while the string is in use (names.go).
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
