//go:build !race

package shmfasthttp_test

// raceEnabled reports a build with the race detector.
const raceEnabled = false
