package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestProcessLiveZone runs check, keys and dump as processes of their own
// on a zone that two goroutines of this process write as fast as they can
// (sets of changing sizes, deletes, increments, Mutate byte by byte, list
// pushes and pops: the structure changes all the time and entries are
// evicted): check must find the zone sound every time, keys and dump must
// succeed, and every bytes value dump prints must be one whole write.
func TestProcessLiveZone(t *testing.T) {
	seed := testutil.Seed(t)
	dir := t.TempDir()
	// The writers wait as long as the machine makes them: a writer that a
	// busy machine deschedules holding a lock is not what the test is about.
	d, err := dict.Open(filepath.Join(dir, "app.zone"), dict.Options{Size: 1 << 20, Shards: 8, LockTimeout: testutil.Hang})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for !stop.Load() {
				if err := liveWrite(d, r); err != nil {
					errc <- err
					return
				}
				ops.Add(1)
			}
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	for ops.Load() < 20_000 {
		select {
		case err := <-errc:
			t.Fatalf("writer: %v", err)
		case <-time.After(time.Millisecond):
		}
	}

	for i := range 20 {
		cmd := liveShmctl(t, dir, "check", "app")
		var out bytes.Buffer
		cmd.Stdout = &out
		if code, errs := exitOf(t, cmd); code != exitOK || !strings.HasSuffix(out.String(), ": sound\n") {
			t.Fatalf("shmctl check #%d on a zone being written: exit %d, stdout\n%s\nstderr\n%s", i, code, out.String(), errs)
		}
		if i%4 != 0 {
			continue
		}
		if code, errs := exitOf(t, liveShmctl(t, dir, "keys", "app")); code != exitOK {
			t.Fatalf("shmctl keys #%d on a zone being written: exit %d, stderr\n%s", i, code, errs)
		}
		cmd = liveShmctl(t, dir, "dump", "app")
		out.Reset()
		cmd.Stdout = &out
		if code, errs := exitOf(t, cmd); code != exitOK {
			t.Fatalf("shmctl dump #%d on a zone being written: exit %d, stderr\n%s", i, code, errs)
		}
		if err := liveDumpWhole(out.Bytes()); err != nil {
			t.Fatalf("shmctl dump #%d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("writer: %v", err)
	default:
	}
	if st := d.Stats(); st.Evictions == 0 {
		t.Errorf("Stats().Evictions = 0: the writers never filled the zone")
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check() after the writers = %v", err)
	}
	t.Logf("%d writes", ops.Load())
}

// liveShmctl is shmctl without the race detector's pause of a second at
// exit, which would make most of the test's time.
func liveShmctl(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := shmctl(t, dir, args...)
	cmd.Env = append(cmd.Env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// liveWrite makes one random write of TestProcessLiveZone. Every bytes value
// is one letter repeated, so that a torn read shows.
func liveWrite(d *dict.Dict, r *rand.Rand) error {
	k := r.IntN(4000)
	key := fmt.Sprintf("k%04d", k)
	c := byte('a' + r.IntN(26))
	var err error
	switch x := r.IntN(100); {
	case x < 8:
		err = d.Delete(key)
	case k%4 == 0:
		_, err = d.Set(key, dict.Bytes(bytes.Repeat([]byte{c}, 1+r.IntN(400))), 0, 0)
	case k%4 == 1:
		if _, err = d.Incr(key, 1); errors.Is(err, dict.ErrNotFound) {
			_, err = d.Set(key, dict.Int(0), 0, 0)
		}
	case k%4 == 2:
		err = d.Mutate(key, 200, 0, func(b []byte, found bool) bool {
			for i := range b {
				b[i] = c
			}
			return true
		})
	case x < 60:
		_, err = d.LPush(key, dict.Bytes(bytes.Repeat([]byte{c}, 1+r.IntN(40))))
	default:
		_, err = d.RPop(key)
	}
	for _, ok := range []error{dict.ErrNoMemory, dict.ErrNotFound, dict.ErrWrongShape} {
		if errors.Is(err, ok) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// liveDumpWhole checks every line of a dump of TestProcessLiveZone's zone:
// JSON, with every bytes value, and every bytes element of a list, one
// letter repeated (Mutate's new entries start as zero bytes).
func liveDumpWhole(dump []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(nil, 1<<20)
	n := 0
	for ; sc.Scan(); n++ {
		var it struct {
			Key      string          `json:"key"`
			Kind     string          `json:"kind"`
			Value    json.RawMessage `json:"value"`
			ValueB64 string          `json:"value_b64"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			return fmt.Errorf("line %d %q: %v", n+1, sc.Text(), err)
		}
		var vals []string
		switch it.Kind {
		case "bytes":
			var s string
			if err := json.Unmarshal(it.Value, &s); err != nil || it.ValueB64 != "" {
				return fmt.Errorf("line %d %q: bytes value %v", n+1, sc.Text(), err)
			}
			vals = []string{s}
		case "list":
			var elems []struct {
				Kind  string `json:"kind"`
				Value string `json:"value"`
			}
			if err := json.Unmarshal(it.Value, &elems); err != nil {
				return fmt.Errorf("line %d %q: list %v", n+1, sc.Text(), err)
			}
			for _, e := range elems {
				vals = append(vals, e.Value)
			}
		}
		for _, v := range vals {
			if v != "" && strings.Trim(v, v[:1]) != "" {
				return fmt.Errorf("key %q holds %q: bytes of two writes", it.Key, v)
			}
		}
	}
	if n == 0 {
		return errors.New("no keys")
	}
	return sc.Err()
}
