package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestHelperProcess runs the helper processes of this package's tests.
func TestHelperProcess(t *testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"hammer": helperHammer,
	})
}

// Heavy writers of TestProcessHeavyWriters.
const (
	heavyWriters = 6
	heavyKeys    = 3000 // keys each writer sets and deletes
	heavyReady   = 2000 // writes a writer makes before it says "ready"
	heavyRounds  = 6    // rounds of every read verb
)

// helperHammer writes the zone at args[0] until it is killed. Its keys are
// "wSTREAM:N", set to one letter repeated, of a new length each time, and
// deleted half the time: the shard's structure changes at each write. It
// also increments "stable:STREAM", which stays. It prints "ready" after
// heavyReady writes.
func helperHammer(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: hammer ZONE STREAM")
	}
	stream, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	d, err := dict.Open(args[0], dict.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(uint64(stream), 1))
	stable := fmt.Sprintf("stable:%d", stream)
	for n := 1; ; n++ {
		key := fmt.Sprintf("w%d:%d", stream, r.IntN(heavyKeys))
		c := byte('a' + r.IntN(26))
		if _, err := d.Set(key, dict.Bytes(bytes.Repeat([]byte{c}, 1+r.IntN(200))), 0, 0); err != nil {
			return fmt.Errorf("Set(%q) = %w", key, err)
		}
		if r.IntN(2) == 0 {
			if err := d.Delete(key); err != nil && !errors.Is(err, dict.ErrNotFound) {
				return fmt.Errorf("Delete(%q) = %w", key, err)
			}
		}
		if _, err := d.Incr(stable, 1); err != nil {
			return fmt.Errorf("Incr(%q) = %w", stable, err)
		}
		if n == heavyReady {
			fmt.Println("ready")
		}
	}
}

// TestProcessHeavyWriters runs shmctl's read verbs as processes while
// heavyWriters processes change the zone's structure as fast as they can.
// Every run must succeed: keys lists every stable key, dump holds each as
// an int and every bytes value whole, get and watch read one, and info,
// ls and limits answer. The stable counters grow across the rounds, so the
// writers wrote while the verbs read.
func TestProcessHeavyWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.zone")
	d, err := dict.Open(path, dict.Options{Size: 16 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var stable []string
	for i := range heavyWriters {
		stable = append(stable, fmt.Sprintf("stable:%d", i))
		if _, err := d.Set(stable[i], dict.Int(0), 0, 0); err != nil {
			t.Fatal(err)
		}
	}

	ready := make(chan int, heavyWriters)
	var procs []*testutil.Proc
	for i := range heavyWriters {
		p := testutil.Start(t, testutil.Helper(t, "hammer", path, strconv.Itoa(i)), func(line string) {
			if line == "ready" {
				ready <- i
			}
		})
		procs = append(procs, p)
	}
	for range heavyWriters {
		select {
		case <-ready:
		case <-anyDone(procs):
			t.Fatalf("a writer exited before it was ready: %v", firstExit(procs))
		}
	}
	before := stableSum(t, d, stable)

	run := func(args ...string) string {
		t.Helper()
		cmd := liveShmctl(t, dir, args...)
		var out bytes.Buffer
		cmd.Stdout = &out
		code, errs := exitOf(t, cmd)
		if code != exitOK {
			t.Fatalf("shmctl %q under %d writers: exit %d, stderr\n%s", args, heavyWriters, code, errs)
		}
		return out.String()
	}
	for round := range heavyRounds {
		keys := strings.Fields(run("keys", "app"))
		for _, k := range stable {
			if !slices.Contains(keys, k) {
				t.Fatalf("round %d: shmctl keys lists %d keys, without %q", round, len(keys), k)
			}
		}
		dump := run("dump", "app")
		if err := liveDumpWhole([]byte(dump)); err != nil {
			t.Fatalf("round %d: shmctl dump: %v", round, err)
		}
		if err := dumpHasInts(dump, stable); err != nil {
			t.Fatalf("round %d: shmctl dump: %v", round, err)
		}
		key := stable[round%len(stable)]
		var got struct {
			Kind  string `json:"kind"`
			Value int64  `json:"value"`
		}
		if out := run("get", "app", key, "--json"); json.Unmarshal([]byte(out), &got) != nil || got.Kind != "int" {
			t.Fatalf("round %d: shmctl get %s --json = %q, want an int", round, key, out)
		}
		run("info", "app", "--shards")
		run("ls")
		run("limits", "app")
		run("watch", "app", "--count", "2", "--interval", "1ms", "--key", key)
	}

	for _, p := range procs {
		select {
		case <-p.Done():
			t.Fatalf("a writer exited during the reads: %v", p.Wait())
		default:
		}
	}
	if after := stableSum(t, d, stable); after <= before {
		t.Errorf("the stable counters went from %d to %d: the writers did not write during the reads", before, after)
	}
	for _, p := range procs {
		p.Kill()
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after the writers = %v", err)
	}
}

// stableSum returns the sum of the stable counters.
func stableSum(t *testing.T, d *dict.Dict, keys []string) int64 {
	t.Helper()
	var sum int64
	for _, k := range keys {
		v, _, err := d.Get(k)
		if err != nil {
			t.Fatalf("Get(%q) = %v", k, err)
		}
		sum += v.Int()
	}
	return sum
}

// dumpHasInts checks that a dump holds every key of keys as an int.
func dumpHasInts(dump string, keys []string) error {
	found := map[string]bool{}
	for line := range strings.Lines(dump) {
		var it struct {
			Key   string          `json:"key"`
			Kind  string          `json:"kind"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			return fmt.Errorf("line %q: %v", line, err)
		}
		if !slices.Contains(keys, it.Key) {
			continue
		}
		if _, err := strconv.ParseInt(string(it.Value), 10, 64); it.Kind != "int" || err != nil {
			return fmt.Errorf("key %q: %s %s, want an int", it.Key, it.Kind, it.Value)
		}
		found[it.Key] = true
	}
	for _, k := range keys {
		if !found[k] {
			return fmt.Errorf("no key %q", k)
		}
	}
	return nil
}

// anyDone returns a channel closed when any of procs exits.
func anyDone(procs []*testutil.Proc) <-chan struct{} {
	c := make(chan struct{})
	var once sync.Once
	for _, p := range procs {
		go func() {
			<-p.Done()
			once.Do(func() { close(c) })
		}()
	}
	return c
}

// firstExit returns the error of the first of procs that exited.
func firstExit(procs []*testutil.Proc) error {
	for _, p := range procs {
		select {
		case <-p.Done():
			return p.Wait()
		default:
		}
	}
	return nil
}
