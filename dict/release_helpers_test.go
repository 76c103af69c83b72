package dict_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// What the tests of release_test.go and their helper processes share: the
// keys, the values and the helpers' bodies.

// shortKeys is how many keys each short-lived writer sets.
const shortKeys = 8

// How a short-lived writer leaves the zone.
const (
	leaveClose = "close" // Close, then exit
	leaveExit  = "exit"  // exit without Close
	leaveKill  = "kill"  // print readyLine and wait for SIGKILL
)

// shortKey returns writer n's k-th key.
func shortKey(n, k int) string { return fmt.Sprintf("w%05d-%d", n, k) }

// shortSizes returns the sizes of writer n's values, 8 to 307 bytes, drawn
// from the seed's stream n.
func shortSizes(seed uint64, n int) [shortKeys]int {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	var s [shortKeys]int
	for k := range s {
		s[k] = 8 + r.IntN(300)
	}
	return s
}

// releaseValue returns the n bytes stored under key: its bytes over and
// over, each xored with n, so that a value of another key or size differs.
func releaseValue(key string, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = key[i%len(key)] ^ byte(n)
	}
	return b
}

// helperShortWriter is one short-lived writer of TestShortLivedWriters:
// args are the zone's path, the seed, the writer's number and how it
// leaves (leaveClose, leaveExit, leaveKill). It waits at the gate, opens
// the zone, SafeSets its keys, printing "ack KEY" after each, and leaves.
func helperShortWriter(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("want path, seed, number and how to leave, got %q", args)
	}
	seed, err1 := strconv.ParseUint(args[1], 10, 64)
	n, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if err := testutil.AwaitGate(); err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	for k, size := range shortSizes(seed, n) {
		key := shortKey(n, k)
		if err := d.SafeSet(key, dict.Bytes(releaseValue(key, size)), 0, 0); err != nil {
			return fmt.Errorf("SafeSet(%q, %d bytes) = %w", key, size, err)
		}
		fmt.Println("ack", key)
	}
	switch args[3] {
	case leaveClose:
		return d.Close()
	case leaveExit:
		return nil // RunHelper exits without Close
	}
	fmt.Println(readyLine)
	for {
		time.Sleep(time.Hour)
	}
}

// replacedKeys bounds the keys a writer of TestCrashWritersReplaced sets.
const replacedKeys = 12

// helperReplacedWriter is one writer of TestCrashWritersReplaced: args are
// the zone's path, the seed and the writer's number. It opens the zone and
// Sets replacedKeys new keys of 8 to 307 bytes, printing "ack KEY SIZE"
// after each Set returns, and readyLine after half of them; then it waits
// to be killed. A Set that evicted is an error.
func helperReplacedWriter(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want path, seed and number, got %q", args)
	}
	seed, err1 := strconv.ParseUint(args[1], 10, 64)
	n, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for k := range replacedKeys {
		if k == replacedKeys/2 {
			fmt.Println(readyLine)
		}
		key, size := shortKey(n, k), 8+r.IntN(300)
		forcible, err := d.Set(key, dict.Bytes(releaseValue(key, size)), 0, 0)
		if err != nil || forcible {
			return fmt.Errorf("Set(%q, %d bytes) = %t, %v, want no eviction", key, size, forcible, err)
		}
		fmt.Println("ack", key, size)
	}
	for {
		time.Sleep(time.Hour)
	}
}
