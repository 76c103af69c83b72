package httplimit

import "unsafe"

// view returns b as a string without a copy. The caller must not change b
// while the string lives, nor keep the string. ForwardedBytes parses
// addresses from it. netip keeps no part of what it parses.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
