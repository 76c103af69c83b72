// Package xxh3cmp holds no code. Its tests compare the zone's key hash,
// internal/keyhash, with github.com/zeebo/xxh3: TestSame checks that both
// compute the same function, and BenchmarkHash times both on the keys
// servers make. bench/RESULTS.md has the figures and the choice.
//
// It is a module of its own so that the core module does not depend on
// zeebo/xxh3.
package xxh3cmp
