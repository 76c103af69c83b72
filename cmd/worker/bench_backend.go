package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/clients"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/redistier"
)

// benchOps, benchBackends and benchKeysets list what -op, -backend and
// -keyset accept, and backendOps which ops each backend runs.
var (
	benchOps      = []string{"incr", "get", "set", "req", "count", "counter"}
	benchBackends = []string{"zone", "mutex", "flock", "redis", "tiered"}
	benchKeysets  = []string{"shared", "own"}
	backendOps    = map[string][]string{
		"zone":   benchOps,
		"mutex":  {"incr", "get", "set"},
		"flock":  {"incr", "get", "set"},
		"redis":  {"incr", "get", "set", "req", "count"},
		"tiered": {"count"},
	}
)

// zoneSize is the size of a zone bench creates.
const zoneSize = 64 << 20

// benchConfig is what a child needs to run: the parent passes it as JSON.
type benchConfig struct {
	Backend  string        `json:"backend"`
	Op       string        `json:"op"`
	Keys     int           `json:"keys"`
	Keyset   string        `json:"keyset"`
	Duration time.Duration `json:"duration"`
	Zone     string        `json:"zone"`
	Redis    string        `json:"redis"`
	Seed     uint64        `json:"seed"`  // of the own keys (keyNames) and of their arrival (clients.Arrivals)
	Procs    int           `json:"procs"` // the processes of the row
}

// turnsPath is the file of the counter by which the processes of a row
// take turns to create their own keys on the zone (clients.Turns).
func turnsPath(cfg benchConfig) string { return cfg.Zone + ".turns" }

// target is one process's connection to a backend: do runs the op on key i.
type target struct {
	do    func(i int) error
	close func() error
}

// keyNames returns the keys process id uses. With keyset shared they are
// "bench:0" to "bench:N-1" in every process; with own they are N client
// addresses ("203.0.113.7:51234") drawn at random from seed, stream id (see
// clients.Addrs), as a server sees them: no two processes share one, and
// they fall on the zone's shards with no regard to which process uses them.
func keyNames(n int, keyset string, seed uint64, id int) []string {
	if keyset == "own" {
		return clients.Addrs(seed, uint64(id), n)
	}
	ks := make([]string, 0, n)
	for i := range n {
		ks = append(ks, "bench:"+strconv.Itoa(i))
	}
	return ks
}

// openTarget connects to cfg's backend as bench process id (0, 1, … in a
// row) and makes sure every key it uses exists: each process creates its
// own keys, and the shared keys too, which every process creates if absent.
func openTarget(cfg benchConfig, id int) (*target, error) {
	keys := keyNames(cfg.Keys, cfg.Keyset, cfg.Seed, id)
	switch cfg.Backend {
	case "zone":
		return openZone(cfg, id, keys)
	case "mutex":
		return openMutex(cfg, keys), nil
	case "flock":
		return openFlock(cfg, id)
	case "redis":
		return openRedis(cfg, keys)
	case "tiered":
		return openTiered(cfg, keys)
	}
	return nil, fmt.Errorf("unknown backend %q", cfg.Backend)
}

// openZone opens the zone and creates the entries the op uses before the
// start: an int under each key for incr, get, set and counter (which
// flushes into them), the limiter's state of each key for req and count
// (one decision each, far below their limits). With keyset own, process id
// creates its keys in turns with the other processes of the row, in the
// order their clients would arrive at a server (clients.Arrivals): a
// server's processes create their clients' entries as those arrive, mixed
// in time, and where they go is the zone's choice.
func openZone(cfg benchConfig, id int, keys []string) (*target, error) {
	d, err := dict.Open(cfg.Zone, dict.Options{Size: zoneSize})
	if err != nil {
		return nil, err
	}
	t := &target{close: d.Close}
	ctx := context.Background()
	switch cfg.Op {
	case "incr":
		t.do = func(i int) error { _, err := d.Incr(keys[i], 1); return err }
	case "get":
		t.do = func(i int) error { _, _, err := d.Get(keys[i]); return err }
	case "set":
		t.do = func(i int) error { _, err := d.Set(keys[i], dict.Int(int64(i)), 0, 0); return err }
	case "req", "count":
		l, err := benchLimiter(d, cfg.Op)
		if err != nil {
			d.Close()
			return nil, err
		}
		t.do = func(i int) error { _, err := l.Incoming(ctx, keys[i], true); return err }
	case "counter":
		c, err := counter.New(d, time.Second)
		if err != nil {
			d.Close()
			return nil, err
		}
		t.do = func(i int) error { c.Incr(keys[i], 1); return nil }
		t.close = func() error { return errors.Join(c.Close(), d.Close()) }
	}
	create, err := createZoneKeys(d, cfg.Op, keys)
	if err == nil && cfg.Keyset == "own" {
		err = clients.CreateInTurns(turnsPath(cfg), cfg.Seed, id, cfg.Procs, cfg.Keys, create)
	} else if err == nil {
		for i := range keys {
			if err = create(i); err != nil {
				break
			}
		}
	}
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// benchLimiter returns the limiter of op req or count, far from its limit.
func benchLimiter(d *dict.Dict, op string) (limiter.Limiter, error) {
	if op == "req" {
		return limiter.NewReq(d, "bench", 1e9, 1e9)
	}
	return limiter.NewCount(d, "bench", 1<<53, time.Hour)
}

// createZoneKeys returns what makes sure the entry of keys[i] exists as op
// uses it: an int (0 when absent) for incr, get, set and counter; for req
// and count, the limiter's state, by one decision.
func createZoneKeys(d *dict.Dict, op string, keys []string) (func(i int) error, error) {
	if op == "req" || op == "count" {
		l, err := benchLimiter(d, op)
		if err != nil {
			return nil, err
		}
		ctx := context.Background()
		return func(i int) error { _, err := l.Incoming(ctx, keys[i], true); return err }, nil
	}
	return func(i int) error { _, _, err := d.IncrInit(keys[i], 0, 0, 0); return err }, nil
}

// openMutex is a map in this process under one sync.Mutex: what one process
// reaches with no sharing at all.
func openMutex(cfg benchConfig, keys []string) *target {
	var mu sync.Mutex
	m := make(map[string]int64, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	t := &target{close: func() error { return nil }}
	switch cfg.Op {
	case "incr":
		t.do = func(i int) error { mu.Lock(); m[keys[i]]++; mu.Unlock(); return nil }
	case "get":
		t.do = func(i int) error { mu.Lock(); _ = m[keys[i]]; mu.Unlock(); return nil }
	case "set":
		t.do = func(i int) error { mu.Lock(); m[keys[i]] = int64(i); mu.Unlock(); return nil }
	}
	return t
}

// openFlock keeps the counters in a file of 8-byte slots, one per key, and
// reads and writes a slot under flock on the file: the naive cross-process
// answer. With keyset shared every process uses slots 0 to N-1; with own,
// process id uses slots id·N to id·N+N-1, which it zeroes before the start
// (a write past the end grows the file, and no process shrinks it).
func openFlock(cfg benchConfig, id int) (*target, error) {
	f, err := os.OpenFile(cfg.Zone+".flock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	base := int64(0)
	if cfg.Keyset == "own" {
		base = int64(8 * cfg.Keys * id)
		_, err = f.WriteAt(make([]byte, 8*cfg.Keys), base)
	} else {
		err = f.Truncate(int64(8 * cfg.Keys))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	var buf [8]byte
	lock := func(how int) error {
		for {
			err := syscall.Flock(fd, how)
			if err != syscall.EINTR {
				return err
			}
		}
	}
	t := &target{close: f.Close}
	switch cfg.Op {
	case "incr":
		t.do = func(i int) error {
			if err := lock(syscall.LOCK_EX); err != nil {
				return err
			}
			_, err := f.ReadAt(buf[:], base+int64(8*i))
			if err == nil {
				binary.LittleEndian.PutUint64(buf[:], binary.LittleEndian.Uint64(buf[:])+1)
				_, err = f.WriteAt(buf[:], base+int64(8*i))
			}
			return errors.Join(err, lock(syscall.LOCK_UN))
		}
	case "get":
		t.do = func(i int) error {
			if err := lock(syscall.LOCK_SH); err != nil {
				return err
			}
			_, err := f.ReadAt(buf[:], base+int64(8*i))
			return errors.Join(err, lock(syscall.LOCK_UN))
		}
	case "set":
		t.do = func(i int) error {
			if err := lock(syscall.LOCK_EX); err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(buf[:], uint64(i))
			_, err := f.WriteAt(buf[:], base+int64(8*i))
			return errors.Join(err, lock(syscall.LOCK_UN))
		}
	}
	return t, nil
}

// openRedis gives this process its own go-redis client.
func openRedis(cfg benchConfig, keys []string) (*target, error) {
	c := redis.NewClient(&redis.Options{Addr: cfg.Redis, ContextTimeoutEnabled: true, PoolSize: 1})
	ctx := context.Background()
	// Create the keys in pipelined batches: one round trip a key would take
	// longer than the run at 100,000 keys.
	for rest := keys; len(rest) > 0; {
		n := min(len(rest), 1000)
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range rest[:n] {
				p.SetNX(ctx, k, 0, 0)
			}
			return nil
		})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("redis %s: %w", cfg.Redis, err)
		}
		rest = rest[n:]
	}
	t := &target{close: c.Close}
	switch cfg.Op {
	case "incr":
		t.do = func(i int) error { return c.Incr(ctx, keys[i]).Err() }
	case "get":
		t.do = func(i int) error { return c.Get(ctx, keys[i]).Err() }
	case "set":
		t.do = func(i int) error { return c.Set(ctx, keys[i], i, 0).Err() }
	case "req":
		l, err := redistier.NewReq(c, "benchreq", "1000000000r/s", 1e9, 0, redistier.Options{Timeout: time.Second})
		if err != nil {
			c.Close()
			return nil, err
		}
		t.do = func(i int) error { _, err := l.Incoming(ctx, keys[i], true); return err }
	case "count":
		l, err := redistier.NewCount(c, "benchcount", 1<<60, time.Hour, redistier.Options{Timeout: time.Second})
		if err != nil {
			c.Close()
			return nil, err
		}
		t.do = func(i int) error { _, err := l.Incoming(ctx, keys[i], true); return err }
	}
	return t, nil
}

// openTiered is redistier.Tiered: a global fixed window counted in the zone,
// which one process of the host flushes to Redis every 100 ms. It fails
// open: a flush cut short when a run ends marks Redis failed for the zone
// until the next flush succeeds, and the run measures decisions either way.
func openTiered(cfg benchConfig, keys []string) (*target, error) {
	d, err := dict.Open(cfg.Zone, dict.Options{Size: zoneSize})
	if err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: cfg.Redis, ContextTimeoutEnabled: true, PoolSize: 2})
	l, err := redistier.NewTiered(d, c, "benchtiered", 1<<60, time.Hour, 100*time.Millisecond,
		redistier.Options{Timeout: time.Second, OnFailure: redistier.FailOpen})
	if err != nil {
		c.Close()
		d.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Ping(ctx).Err(); err != nil {
		cancel()
		c.Close()
		d.Close()
		return nil, fmt.Errorf("redis %s: %w", cfg.Redis, err)
	}
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	return &target{
		do: func(i int) error { _, err := l.Incoming(ctx, keys[i], true); return err },
		close: func() error {
			cancel()
			<-done
			return errors.Join(c.Close(), d.Close())
		},
	}, nil
}
