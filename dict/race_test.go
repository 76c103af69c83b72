//go:build race

package dict_test

// raceEnabled reports a build with the race detector, under which some
// tests do fewer rounds.
const raceEnabled = true
