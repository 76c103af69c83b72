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
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/redistier"
)

// benchOps and benchBackends list what -op and -backend accept, and
// backendOps which ops each backend runs.
var (
	benchOps      = []string{"incr", "get", "set", "req", "count", "counter"}
	benchBackends = []string{"zone", "mutex", "flock", "redis", "tiered"}
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
	Duration time.Duration `json:"duration"`
	Zone     string        `json:"zone"`
	Redis    string        `json:"redis"`
}

// target is one process's connection to a backend: do runs the op on key i.
type target struct {
	do    func(i int) error
	close func() error
}

func keyNames(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "bench:" + strconv.Itoa(i)
	}
	return ks
}

// openTarget connects to cfg's backend and makes sure every key exists.
func openTarget(cfg benchConfig) (*target, error) {
	keys := keyNames(cfg.Keys)
	switch cfg.Backend {
	case "zone":
		return openZone(cfg, keys)
	case "mutex":
		return openMutex(cfg, keys), nil
	case "flock":
		return openFlock(cfg)
	case "redis":
		return openRedis(cfg, keys)
	case "tiered":
		return openTiered(cfg, keys)
	}
	return nil, fmt.Errorf("unknown backend %q", cfg.Backend)
}

func openZone(cfg benchConfig, keys []string) (*target, error) {
	d, err := dict.Open(cfg.Zone, dict.Options{Size: zoneSize})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if _, _, err := d.IncrInit(k, 0, 0, 0); err != nil {
			d.Close()
			return nil, err
		}
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
	case "req":
		l, err := limiter.NewReq(d, 1e9, 1e9)
		if err != nil {
			d.Close()
			return nil, err
		}
		t.do = func(i int) error { _, err := l.Incoming(ctx, "req:"+keys[i], true); return err }
	case "count":
		l, err := limiter.NewCount(d, 1<<60, time.Hour)
		if err != nil {
			d.Close()
			return nil, err
		}
		t.do = func(i int) error { _, err := l.Incoming(ctx, "count:"+keys[i], true); return err }
	case "counter":
		c, err := counter.New(d, time.Second)
		if err != nil {
			d.Close()
			return nil, err
		}
		t.do = func(i int) error { c.Incr(keys[i], 1); return nil }
		t.close = func() error { return errors.Join(c.Close(), d.Close()) }
	}
	return t, nil
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
// answer.
func openFlock(cfg benchConfig) (*target, error) {
	f, err := os.OpenFile(cfg.Zone+".flock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if err := f.Truncate(int64(8 * cfg.Keys)); err != nil {
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
			_, err := f.ReadAt(buf[:], int64(8*i))
			if err == nil {
				binary.LittleEndian.PutUint64(buf[:], binary.LittleEndian.Uint64(buf[:])+1)
				_, err = f.WriteAt(buf[:], int64(8*i))
			}
			return errors.Join(err, lock(syscall.LOCK_UN))
		}
	case "get":
		t.do = func(i int) error {
			if err := lock(syscall.LOCK_SH); err != nil {
				return err
			}
			_, err := f.ReadAt(buf[:], int64(8*i))
			return errors.Join(err, lock(syscall.LOCK_UN))
		}
	case "set":
		t.do = func(i int) error {
			if err := lock(syscall.LOCK_EX); err != nil {
				return err
			}
			binary.LittleEndian.PutUint64(buf[:], uint64(i))
			_, err := f.WriteAt(buf[:], int64(8*i))
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
