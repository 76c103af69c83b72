package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
)

// limitsFixture makes the zone "lim": clients of one limiter of each kind,
// some over their limit, a limiter whose record of parameters is gone, and
// a key no limiter wrote.
func (h *harness) limitsFixture() {
	h.t.Helper()
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	d := h.dict("lim")
	defer d.Close()
	ctx := context.Background()
	must := func(l limiter.Limiter, err error) limiter.Limiter {
		h.t.Helper()
		if err != nil {
			h.t.Fatal(err)
		}
		return l
	}
	decide := func(l limiter.Limiter, key string, n int) {
		h.t.Helper()
		for range n {
			if _, err := l.Incoming(ctx, key, true); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	req := must(limiter.NewReq(d, "api", 1, 2))
	decide(req, "192.0.2.1", 4) // 3 allowed: over
	decide(req, "192.0.2.2", 2)
	decide(req, "192.0.2.3", 1)
	login := must(limiter.NewCount(d, "login", 3, time.Minute))
	decide(login, "alice", 3) // at her limit
	decide(login, "bob", 1)
	sw := must(limiter.NewSlidingWindow(d, "search", 5, time.Minute))
	decide(sw, "192.0.2.9", 2)
	gcra := must(limiter.NewGCRA(d, "upload", 2, 3))
	decide(gcra, "u1", 3)
	conn := must(limiter.NewConn(d, "streams", 2, 0, 0))
	decide(conn, "192.0.2.1", 1)
	ghost := must(limiter.NewCount(d, "ghost", 10, time.Minute))
	decide(ghost, "x", 1)
	if err := d.Delete("meta|count|ghost"); err != nil { // its record evicted, say
		h.t.Fatal(err)
	}
	if _, err := d.Set("count|login|mallory", dict.Bytes([]byte("not a count")), 0, 0); err != nil {
		h.t.Fatal(err)
	}
	h.advance(500 * time.Millisecond)
	h.opens = nil
}

func TestLimits(t *testing.T) {
	h := newHarness(t)
	h.limitsFixture()
	golden(t, "limits", h.transcript(
		[]string{"limits", "lim"},
		[]string{"limits", "--top", "1", "lim"},
		[]string{"limits", "--name", "login", "lim"},
		[]string{"limits", "--name", "nothing", "lim"},
	))
	golden(t, "limits_json", h.transcript(
		[]string{"limits", "--json", "--name", "api", "lim"},
		[]string{"limits", "--json", "--name", "nothing", "lim"},
	))
	if _, stderr, code := h.run("limits", "--top", "-1", "lim"); code != exitUsage {
		t.Errorf("limits --top -1: exit %d, stderr %q; want %d", code, stderr, exitUsage)
	}
	if _, _, code := h.run("limits", "none"); code != exitNoZone {
		t.Errorf("limits of no zone: exit %d, want %d", code, exitNoZone)
	}
	// The JSON is what the table shows.
	var ls []struct {
		Kind    string `json:"kind"`
		Clients []struct {
			Key       string `json:"key"`
			State     string `json:"state"`
			Remaining *int64 `json:"remaining"`
		} `json:"clients"`
	}
	if err := json.Unmarshal([]byte(h.ok("limits", "--json", "--name", "login", "lim")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || len(ls[0].Clients) != 3 || ls[0].Clients[1].Key != "alice" || ls[0].Clients[1].State != "over" || *ls[0].Clients[1].Remaining != 0 {
		t.Errorf("limits --json --name login = %+v, want mallory's bad state, then alice over with 0 remaining", ls)
	}
}

// TestProcessLimitsLiveZone runs limits as a process of its own on a zone
// whose limiters two goroutines of this process decide on as fast as they
// can: every run succeeds, and lists only the limiters there are, with
// what a dry run can answer. The zone holds every client, so that no
// record of the limiters' parameters is evicted (TestLimits has a limiter
// without one).
func TestProcessLimitsLiveZone(t *testing.T) {
	dir := t.TempDir()
	d, err := dict.Open(filepath.Join(dir, "live.zone"), dict.Options{Size: 4 << 20, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	req, err := limiter.NewReq(d, "api", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	count, err := limiter.NewCount(d, "login", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for w, l := range []limiter.Limiter{req, count} {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; !stop.Load(); i++ {
				if _, err := l.Incoming(ctx, fmt.Sprintf("198.51.%d.%d", w, i%2000), true); err != nil {
					errc <- err
					return
				}
				ops.Add(1)
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	for ops.Load() < 10_000 {
		select {
		case err := <-errc:
			t.Fatalf("decision: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	for i := range 10 {
		cmd := liveShmctl(t, dir, "limits", "--json", "--top", "0", "live")
		var out bytes.Buffer
		cmd.Stdout = &out
		if code, errs := exitOf(t, cmd); code != exitOK {
			t.Fatalf("shmctl limits #%d on a zone being written: exit %d, stderr\n%s", i, code, errs)
		}
		var ls []struct {
			Kind    string `json:"kind"`
			Name    string `json:"name"`
			Known   bool   `json:"known"`
			Clients []struct {
				State     string `json:"state"`
				Remaining *int64 `json:"remaining"`
			} `json:"clients"`
		}
		if err := json.Unmarshal(out.Bytes(), &ls); err != nil {
			t.Fatalf("shmctl limits #%d: %v\n%s", i, err, out.String())
		}
		for _, l := range ls {
			if id := l.Kind + " " + l.Name; id != "req api" && id != "count login" || !l.Known {
				t.Fatalf("shmctl limits #%d lists %s, known %v: not a limiter of the zone", i, id, l.Known)
			}
			for _, c := range l.Clients {
				if c.Remaining == nil || *c.Remaining < 0 || c.State != "ok" && c.State != "over" && c.State != "delayed" {
					t.Fatalf("shmctl limits #%d: %s %s has a client %+v", i, l.Kind, l.Name, c)
				}
			}
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("decision: %v", err)
	default:
	}
}
