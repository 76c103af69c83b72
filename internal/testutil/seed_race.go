//go:build race

package testutil

func init() { raceEnabled = true }
