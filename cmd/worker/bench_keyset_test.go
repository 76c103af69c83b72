package main

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmzone/shmzone/dict"
)

func TestBenchKeysetFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "shared"},
		{[]string{"-keyset", "shared"}, "shared"},
		{[]string{"-keyset", "own"}, "own"},
		{[]string{"-keyset", "own", "-backend", "flock", "-op", "get"}, "own"},
	} {
		f, err := parseBenchFlags(c.args, &strings.Builder{})
		if err != nil || f.cfg.Keyset != c.want {
			t.Errorf("parseBenchFlags(%q) keyset %q, %v, want %q", c.args, f.cfg.Keyset, err, c.want)
		}
	}
}

func TestKeyNames(t *testing.T) {
	shared := keyNames(3, "shared", 7, 1)
	if strings.Join(shared, " ") != "bench:0 bench:1 bench:2" {
		t.Fatalf("keyNames(3, shared) = %q, want bench:0 to bench:2", shared)
	}
	seen := map[string]bool{}
	for id := range 2 {
		own := keyNames(1000, "own", 7, id)
		if len(own) != 1000 {
			t.Fatalf("keyNames(1000, own, 7, %d) has %d keys", id, len(own))
		}
		for _, k := range own {
			if _, err := netip.ParseAddrPort(k); err != nil {
				t.Fatalf("own key %q is not a client address: %v", k, err)
			}
			if seen[k] {
				t.Fatalf("own key %q drawn twice (process %d)", k, id)
			}
			seen[k] = true
		}
		if again := keyNames(1000, "own", 7, id); !slices.Equal(own, again) {
			t.Fatalf("keyNames(1000, own, 7, %d) differs between calls: the parent and process %d would not agree", id, id)
		}
	}
}

// totalOps is the ops of every row of a report.
func totalOps(rep report) int64 {
	var n int64
	for _, r := range rep.Rows {
		n += r.Ops
	}
	return n
}

// TestBenchKeysetZone runs incr at procs 1 and 2 on one zone with each
// keyset and checks what the processes left there: with shared, the same
// -keys keys for all; with own, -keys client addresses per process of the
// largest row, process 0's the same in both rows (the processes create
// them in turns); and every op counted once.
func TestBenchKeysetZone(t *testing.T) {
	t.Parallel()
	const keys = 50
	for _, c := range []struct {
		keyset  string
		entries int
	}{{"shared", keys}, {"own", 2 * keys}} {
		t.Run(c.keyset, func(t *testing.T) {
			t.Parallel()
			zone := filepath.Join(t.TempDir(), "z")
			rep := benchJSON(t, "-keyset", c.keyset, "-zone", zone, "-keys", strconv.Itoa(keys),
				"-procs", "1,2", "-duration", "100ms")
			if rep.Keyset != c.keyset || len(rep.Rows) != 2 {
				t.Fatalf("report keyset %q with %d rows, want %q and 2", rep.Keyset, len(rep.Rows), c.keyset)
			}
			d, err := dict.Open(zone, dict.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var n int
			var sum int64
			err = d.Scan(func(it dict.Item) bool {
				n++
				sum += it.Value.Int()
				_, addrErr := netip.ParseAddrPort(it.Key)
				if own := addrErr == nil; own != (c.keyset == "own") || (!own && !strings.HasPrefix(it.Key, "bench:")) {
					t.Errorf("key %q in a %s run", it.Key, c.keyset)
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != c.entries {
				t.Errorf("zone holds %d keys, want %d", n, c.entries)
			}
			if want := totalOps(rep); sum != want {
				t.Errorf("the keys sum to %d, want the %d ops the rows report", sum, want)
			}
		})
	}
}

// TestBenchKeysetFlock checks the flock file's slots: shared, -keys slots
// for all; own, -keys slots per process of the largest row.
func TestBenchKeysetFlock(t *testing.T) {
	t.Parallel()
	const keys = 40
	for _, c := range []struct {
		keyset string
		slots  int
	}{{"shared", keys}, {"own", 2 * keys}} {
		t.Run(c.keyset, func(t *testing.T) {
			t.Parallel()
			zone := filepath.Join(t.TempDir(), "z")
			// One row at procs 2, so that the file's sum is that row's ops.
			rep := benchJSON(t, "-backend", "flock", "-keyset", c.keyset, "-zone", zone,
				"-keys", strconv.Itoa(keys), "-procs", "2", "-duration", "100ms")
			b, err := os.ReadFile(zone + ".flock")
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 8*c.slots {
				t.Fatalf("flock file of %d bytes, want %d slots of 8", len(b), c.slots)
			}
			var sum int64
			for i := 0; i < len(b); i += 8 {
				sum += int64(binary.LittleEndian.Uint64(b[i:]))
			}
			if want := totalOps(rep); sum != want {
				t.Errorf("the slots sum to %d, want the %d ops the row reports", sum, want)
			}
		})
	}
}
