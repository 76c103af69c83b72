package dict_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// Tests of the pages of processes that leave (release.go): processes that
// come and go fill the pages of those before them, however they leave.
// The helpers' bodies, keys and values are in release_helpers_test.go.

// shortProcs is how many writers TestShortLivedWriters runs, one after the
// other; fewer under the race detector, whose processes start slower.
func shortProcs() int {
	if raceEnabled {
		return 300
	}
	return 3000
}

// shortWriter is one helper of TestShortLivedWriters, started and waiting
// at its gate.
type shortWriter struct {
	n     int
	how   string
	p     *testutil.Proc
	gate  *testutil.Gate
	ready chan struct{} // closed when it printed readyLine
	mu    sync.Mutex
	acked []string
}

// startShortWriter starts writer n, which waits at its gate to open the
// zone: its start-up overlaps the work of the writer before it.
func startShortWriter(t *testing.T, path string, seed uint64, n int) *shortWriter {
	w := &shortWriter{n: n, how: []string{leaveClose, leaveExit, leaveKill}[n%3], gate: testutil.NewGate(t), ready: make(chan struct{})}
	cmd := testutil.Helper(t, "short-writer", path, strconv.FormatUint(seed, 10), strconv.Itoa(n), w.how)
	w.gate.Attach(cmd)
	w.p = testutil.Start(t, cmd, func(line string) {
		if line == readyLine {
			close(w.ready)
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.acked = append(w.acked, strings.TrimPrefix(line, "ack "))
	})
	return w
}

// finish lets w open the zone and write, and returns once it has left as
// it was told to.
func (w *shortWriter) finish() error {
	w.gate.Open()
	if w.how != leaveKill {
		return w.p.Wait()
	}
	select {
	case <-w.ready:
	case <-w.p.Done():
		return fmt.Errorf("ended before it was ready: %v", w.p.Wait())
	case <-time.After(time.Minute):
		return fmt.Errorf("not ready after a minute")
	}
	return w.p.Kill()
}

// TestShortLivedWriters runs shortProcs writers one after the other, each
// a process that opens a 32 MiB zone, SafeSets 8 keys of 8 to 307 bytes
// and leaves: by Close, by exiting without it, or killed. No SafeSet may
// find no memory, nothing may be evicted, and every key reads back. Each
// writer fills pages of its own; without their release, 3,000 writers
// took 8 pages each, and SafeSets failed with three quarters of the zone
// free.
func TestShortLivedWriters(t *testing.T) {
	procs := shortProcs()
	seed := testutil.Seed(t)
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	start := time.Now()
	next := startShortWriter(t, path, seed, 0)
	for n := 0; n < procs; n++ {
		w := next
		if n+1 < procs {
			next = startShortWriter(t, path, seed, n+1)
		}
		if err := w.finish(); err != nil {
			t.Fatalf("writer %d (%s): %v", n, w.how, err)
		}
		if len(w.acked) != shortKeys {
			t.Fatalf("writer %d (%s) acknowledged %d keys, want %d", n, w.how, len(w.acked), shortKeys)
		}
	}
	elapsed := time.Since(start)

	st := d.Stats()
	if st.Evictions != 0 || st.Lost != 0 {
		t.Errorf("Stats() evictions %d, lost %d; want 0, 0", st.Evictions, st.Lost)
	}
	if st.Entries != int64(procs*shortKeys) {
		t.Errorf("Stats().Entries = %d, want %d", st.Entries, procs*shortKeys)
	}
	if st.HeldPages != 0 {
		t.Errorf("Stats().HeldPages = %d with every writer gone, want 0", st.HeldPages)
	}
	for n := 0; n < procs; n++ {
		for k, size := range shortSizes(seed, n) {
			key := shortKey(n, k)
			if v, _, err := d.Get(key); err != nil || !bytes.Equal(v.Bytes(), releaseValue(key, size)) {
				t.Fatalf("Get(%q) = %d bytes, %v; want the %d written", key, len(v.Bytes()), err, size)
			}
		}
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() = %v", err)
	}
	pages := 0
	for _, c := range d.SlabStats() {
		pages += c.Pages
	}
	t.Logf("%d writers in %v (%v each): %d entries in %d pages, %d bytes free, %d of them in pages in use",
		procs, elapsed.Round(time.Millisecond), (elapsed / time.Duration(procs)).Round(time.Microsecond), st.Entries, pages, st.FreeSpace, st.StrandedBytes)
}

// Writers of TestCrashWritersReplaced.
const (
	replacedSlots    = 4 // writers at once
	replacedMaxDelay = 2 * time.Millisecond
)

// replacedKills is how many writers TestCrashWritersReplaced kills: fewer
// under the race detector. SHMZONE_CRASH_KILLS overrides it.
func replacedKills(t *testing.T) int {
	if raceEnabled {
		return crashKills(t, 400)
	}
	return crashKills(t, 3000)
}

// replacedTally is what the writers of TestCrashWritersReplaced
// acknowledged: each key's value size.
type replacedTally struct {
	kills int
	acked map[string]int
}

func (t *replacedTally) add(o *replacedTally) {
	t.kills += o.kills
	if t.acked == nil {
		t.acked = map[string]int{}
	}
	for k, v := range o.acked {
		t.acked[k] = v
	}
}

// TestCrashWritersReplaced SIGKILLs writers, each replaced by a new one,
// thousands of times: each writer sets replacedKeys new keys of 8 to 307
// bytes into a 32 MiB zone, acknowledging each once Set returned, and is
// killed 0 to 2 ms after it set half of them, often in the middle of the
// rest. The zone never gets half full. No Set may evict, and every
// acknowledged key must read back whole: the pages each writer took are
// taken over by the writers after it.
func TestCrashWritersReplaced(t *testing.T) {
	kills := replacedKills(t)
	seed := testutil.Seed(t)
	path := testutil.TempZone(t)
	const size = 32 << 20
	d, err := dict.Open(path, dict.Options{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The largest entry, 355 bytes, takes a chunk of 384.
	if most := kills * replacedKeys * 384; most > size/2 {
		t.Fatalf("%d kills of writers of %d keys could fill %d bytes, more than half the zone", kills, replacedKeys, most)
	}

	var total replacedTally
	elapsed := killRounds(t, replacedSlots, kills, seed, 1<<32, &total, func(n int, r *rand.Rand, mine *replacedTally) error {
		if mine.acked == nil {
			mine.acked = map[string]int{}
		}
		var mu sync.Mutex
		err := killAfterReady(t, testutil.Helper(t, "replaced", path, strconv.FormatUint(seed, 10), strconv.Itoa(n)), r, replacedMaxDelay,
			func(line string) error {
				var key string
				var size int
				if _, err := fmt.Sscanf(line, "ack %s %d", &key, &size); err != nil {
					return fmt.Errorf("printed %q", line)
				}
				mu.Lock()
				defer mu.Unlock()
				mine.acked[key] = size
				return nil
			})
		if err == nil {
			mine.kills++
		}
		return err
	})

	st := crashStats(t, d)
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after %d kills = %v", total.kills, err)
	}
	for key, size := range total.acked {
		if v, _, err := d.Get(key); err != nil || !bytes.Equal(v.Bytes(), releaseValue(key, size)) {
			t.Errorf("Get(%q) = %d bytes, %v; want the %d acknowledged", key, len(v.Bytes()), err, size)
		}
	}
	if st.Evictions != 0 || st.Lost != 0 {
		t.Errorf("Stats() evictions %d, lost %d after %d kills; want 0, 0", st.Evictions, st.Lost, total.kills)
	}
	if st.HeldPages != 0 {
		t.Errorf("Stats().HeldPages = %d with every writer killed, want 0", st.HeldPages)
	}
	pages := 0
	for _, c := range d.SlabStats() {
		pages += c.Pages
	}
	t.Logf("%d kills in %v: %d keys acknowledged, %d entries in %d pages, %d bytes free (%d in pages in use), %d recoveries",
		total.kills, elapsed.Round(time.Millisecond), len(total.acked), st.Entries, pages, st.FreeSpace, st.StrandedBytes, st.Recoveries)
}

// killAfterReady starts a helper, waits until it prints readyLine, and
// SIGKILLs it 0 to maxDelay later (drawn from r); it returns once the
// helper is dead. Every other line it printed goes to onLine, whose first
// error it returns.
func killAfterReady(t *testing.T, cmd *exec.Cmd, r *rand.Rand, maxDelay time.Duration, onLine func(line string) error) error {
	ready := make(chan struct{})
	var mu sync.Mutex
	var lineErr error
	p := testutil.Start(t, cmd, func(line string) {
		if line == readyLine {
			close(ready)
			return
		}
		if err := onLine(line); err != nil {
			mu.Lock()
			lineErr = err
			mu.Unlock()
		}
	})
	select {
	case <-ready:
	case <-p.Done():
		return fmt.Errorf("ended before it was ready: %v", p.Wait())
	case <-time.After(time.Minute):
		return fmt.Errorf("not ready after a minute")
	}
	time.Sleep(time.Duration(r.Int64N(int64(maxDelay) + 1)))
	if err := p.Kill(); err != nil {
		return fmt.Errorf("failed before it was killed: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return lineErr
}

// slabPages returns how many slab pages hold chunks of a class in d's zone.
func slabPages(d *dict.Dict) int {
	n := 0
	for _, c := range d.SlabStats() {
		if c.Size != 0 {
			n += c.Pages
		}
	}
	return n
}

// TestCloseReleasesPages: the pages a Dict filled are held while it is
// open and no one's once it closes; another writer fills their room before
// it takes a free page. That writer opened and allocated before the first
// closed, so that neither its slot nor its sweep tells the closed Dict
// gone: only Close's release does.
func TestCloseReleasesPages(t *testing.T) {
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a, err := dict.Open(path, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := dict.Open(path, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Set("other", dict.Bytes(make([]byte, 1000)), 0, 0); err != nil {
		t.Fatal(err)
	}
	// 60 chunks of 80 bytes: a full page and one with room for 42.
	value := dict.Bytes(make([]byte, 40))
	for i := range 60 {
		if _, err := a.Set(fmt.Sprintf("a%03d", i), value, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if st := d.Stats(); st.HeldPages != 3 || st.StrandedBytes == 0 || st.StrandedBytes >= st.FreeSpace {
		t.Fatalf("Stats() with a and b open: %d held pages, %d of %d free bytes stranded; want 3 held, some stranded", st.HeldPages, st.StrandedBytes, st.FreeSpace)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.HeldPages != 1 {
		t.Fatalf("Stats().HeldPages = %d after a closed, want b's 1", st.HeldPages)
	}
	pages := slabPages(d)
	for i := range 10 {
		if _, err := b.Set(fmt.Sprintf("b%03d", i), value, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := slabPages(d); n != pages {
		t.Errorf("%d slab pages after b filled room a left, want %d", n, pages)
	}
	if st := d.Stats(); st.HeldPages != 2 {
		t.Errorf("Stats().HeldPages = %d after b took a's page over, want 2", st.HeldPages)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSweepKilledWriter: the pages of a writer killed, whose owner slot
// no one claimed since, are released by the next Dict that allocates in
// the shard, which asks the kernel: that Dict fills their room before it
// takes a free page.
func TestSweepKilledWriter(t *testing.T) {
	seed := testutil.Seed(t)
	path := testutil.TempZone(t)
	d, err := dict.Open(path, dict.Options{Size: 1 << 20, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Opened before the writer, so that the writer's slot is one no
	// later Open claims again.
	next, err := dict.Open(path, dict.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	const n = 2 // a writer killed (startShortWriter)
	w := startShortWriter(t, path, seed, n)
	w.gate.Open()
	select {
	case <-w.ready:
	case <-w.p.Done():
		t.Fatalf("writer ended before it was ready: %v", w.p.Wait())
	case <-time.After(time.Minute):
		t.Fatal("writer not ready after a minute")
	}
	if st := d.Stats(); st.HeldPages == 0 {
		t.Fatalf("Stats().HeldPages = 0 with the writer alive, want its pages")
	}
	if err := w.p.Kill(); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.HeldPages != 0 {
		t.Fatalf("Stats().HeldPages = %d with the writer killed, want 0", st.HeldPages)
	}
	// next writes values of the sizes the writer wrote: into its pages.
	pages := slabPages(d)
	for k, size := range shortSizes(seed, n) {
		key := fmt.Sprintf("next-%d", k)
		if _, err := next.Set(key, dict.Bytes(releaseValue(key, size)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := slabPages(d); got != pages {
		t.Errorf("%d slab pages after writing into the killed writer's pages, want %d", got, pages)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
}
