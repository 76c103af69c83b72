//go:build !race

package shmfiber_test

// raceEnabled reports a build with the race detector.
const raceEnabled = false
