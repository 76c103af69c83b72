package main

// serve_global.go: worker serve's global limit (-redis, -global-rate): one
// fixed window count of every request, over every host whose worker serve
// uses the same Redis and -redis-prefix, on top of the per-client -rate.
//
// Why one key for all clients rather than one per client: next to a
// per-client -rate, a "global rate" reads as what the whole service admits,
// as nginx stacks a limit_req per $binary_remote_addr with one per
// $server_name; it protects what sits behind every host. It is also what
// redistier.Tiered does well: its Redis traffic is one round trip per host
// per key per interval, so one key costs a host 1/interval round trips a
// second whatever the load, where a key per client would cost one per
// active client per interval and make the flush a loop over every client.
//
// Each child counts in the host's zone through a Tiered of its own; the
// children share the zone, so they share the host's count, and one child at
// a time (the holder of Tiered's lease in the zone) flushes it to Redis
// every -global-interval. With -per-process every child is a host.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/limiter"
	"github.com/shmzone/shmzone/limiter/redistier"
)

// serveGlobalKey is the one key of the global limit, in the zone and in
// Redis ("prefix:all:window").
const serveGlobalKey = "all"

// serveRedisPing bounds the master's check that Redis answers at start.
const serveRedisPing = 3 * time.Second

// serveGlobalFlags validates the global limit's flags into c; rate is
// -global-rate as given.
func serveGlobalFlags(c *serveConfig, rate string) error {
	if rate == "" && c.Redis == "" {
		return nil
	}
	if rate == "" {
		return errors.New("-redis needs -global-rate")
	}
	if c.Redis == "" {
		return errors.New("-global-rate needs -redis")
	}
	if _, err := serveRedisOptions(c.Redis); err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	var err error
	if c.GlobalLimit, c.GlobalWindow, err = serveParseWindow(rate); err != nil {
		return fmt.Errorf("-global-rate: %w", err)
	}
	if c.GlobalInterval <= 0 || c.GlobalInterval > c.GlobalWindow {
		return fmt.Errorf("-global-interval %v: want more than 0 and at most the window, %v", c.GlobalInterval, c.GlobalWindow)
	}
	if _, err := serveFailure(c.RedisPolicy); err != nil {
		return err
	}
	if c.RedisPrefix == "" {
		return errors.New("-redis-prefix must not be empty")
	}
	return nil
}

// serveParseWindow reads a rate (limiter.ParseRate) as a fixed window:
// "1000r/s" is 1000 requests a second, "30r/m" 30 a minute. The count must
// be a whole number: a window counts requests.
func serveParseWindow(s string) (int64, time.Duration, error) {
	n, per, err := limiter.ParseRateParts(s)
	if err != nil {
		return 0, 0, err
	}
	if n != math.Trunc(n) {
		return 0, 0, fmt.Errorf("%w %q: a fixed window needs a whole count of requests", limiter.ErrBadRate, s)
	}
	if n >= math.MaxInt64 {
		return 0, 0, fmt.Errorf("%w %q: count out of range", limiter.ErrBadRate, s)
	}
	if per == 60 {
		return int64(n), time.Minute, nil
	}
	return int64(n), time.Second, nil
}

// serveFailure maps -redis-policy to Tiered's failure policy. Tiered's own
// default, FailError, would answer 500 while Redis is down; a server is
// better off open, with the per-client -rate still in force.
func serveFailure(policy string) (redistier.Failure, error) {
	switch policy {
	case "open":
		return redistier.FailOpen, nil
	case "closed":
		return redistier.FailClosed, nil
	}
	return 0, fmt.Errorf("-redis-policy %q: want open or closed", policy)
}

// serveRedisOptions reads -redis: host:port, or a redis:// or rediss:// URL
// (for a database, a user, or TLS). The client honours context deadlines, as
// redistier requires.
func serveRedisOptions(addr string) (*redis.Options, error) {
	o := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if o, err = redis.ParseURL(addr); err != nil {
			// url.Parse's error quotes the whole URL, password and all.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = fmt.Errorf("bad URL: %w", ue.Err)
			}
			return nil, err
		}
	}
	o.ContextTimeoutEnabled = true
	return o, nil
}

// serveRedisName is -redis as messages print it: a URL with its password
// replaced by "xxxxx" (url.URL.Redacted).
func serveRedisName(addr string) string {
	if !strings.Contains(addr, "://") {
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "(the -redis URL)"
	}
	return u.Redacted()
}

// serveRedisClient returns the options of c's Redis client: -redis, and
// the credentials of -redis-username and c.Password.
func serveRedisClient(c serveConfig) (*redis.Options, error) {
	o, err := serveRedisOptions(c.Redis)
	if err != nil {
		return nil, err
	}
	if c.RedisUsername != "" {
		o.Username = c.RedisUsername
	}
	if c.Password != "" {
		o.Password = string(c.Password)
	}
	return o, nil
}

// servePingRedis checks, in the master, that Redis answers and takes the
// credentials, so that a wrong -redis fails at start rather than as a log
// line of every child.
func servePingRedis(c serveConfig) error {
	o, err := serveRedisClient(c)
	if err != nil {
		return err
	}
	o.MaxRetries = -1
	client := redis.NewClient(o)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), serveRedisPing)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %w", serveRedisName(c.Redis), err)
	}
	return nil
}

// serveGlobal is a child's global limiter: Tiered under serveGlobalKey,
// whatever the key asked, counting its decisions for /metrics.
type serveGlobal struct {
	t      *redistier.Tiered
	client *redis.Client
	addr   string // -redis for the log, its password redacted
	policy string
	every  time.Duration

	allowed, rejected atomic.Uint64
	flushes           atomic.Uint64 // flushes this child made as the host's flusher
	stop, done        chan struct{}
}

// serveOpenGlobal returns the global limiter of a child over its zone d.
// Its flush loop runs until close.
func serveOpenGlobal(c serveConfig, d *dict.Dict, stderr io.Writer) (*serveGlobal, error) {
	o, err := serveRedisClient(c)
	if err != nil {
		return nil, err
	}
	fail, err := serveFailure(c.RedisPolicy)
	if err != nil {
		return nil, err
	}
	client := redis.NewClient(o)
	t, err := redistier.NewTiered(d, client, c.RedisPrefix, c.GlobalLimit, c.GlobalWindow, c.GlobalInterval, redistier.Options{OnFailure: fail})
	if err != nil {
		client.Close()
		return nil, err
	}
	g := &serveGlobal{t: t, client: client, addr: serveRedisName(c.Redis), policy: c.RedisPolicy, every: c.GlobalInterval,
		stop: make(chan struct{}), done: make(chan struct{})}
	go g.run(stderr)
	return g, nil
}

// Incoming decides on a request under the global limit.
func (g *serveGlobal) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return g.IncomingN(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n under the global limit.
func (g *serveGlobal) IncomingN(ctx context.Context, _ string, n int64, commit bool) (limiter.Decision, error) {
	d, err := g.t.IncomingN(ctx, serveGlobalKey, n, commit)
	if err == nil && commit {
		if d.Allowed {
			g.allowed.Add(1)
		} else {
			g.rejected.Add(1)
		}
	}
	return d, err
}

// Uncommit gives a request back to the global limit.
func (g *serveGlobal) Uncommit(ctx context.Context, _ string) error {
	return g.t.Uncommit(ctx, serveGlobalKey)
}

// UncommitN gives a request of cost n back to the global limit.
func (g *serveGlobal) UncommitN(ctx context.Context, _ string, n int64) error {
	return g.t.UncommitN(ctx, serveGlobalKey, n)
}

// Reset forgets the global count.
func (g *serveGlobal) Reset(ctx context.Context, _ string) error {
	return g.t.Reset(ctx, serveGlobalKey)
}

// run flushes every interval, as Tiered.Run does, and logs when a flush
// fails (the host turns to -redis-policy once Redis has failed as Tiered
// judges: two flushes in a row) and when Redis answers again. Flushes run to their end (each call is bounded by
// Tiered's timeout): one cut short by close would mark Redis failed for the
// whole host, and a roll would turn every child to -redis-policy.
func (g *serveGlobal) run(stderr io.Writer) {
	defer close(g.done)
	tick := time.NewTicker(g.every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		flushed, err := g.t.Flush(context.Background())
		if flushed {
			g.flushes.Add(1)
		}
		switch {
		case err != nil && !failing:
			failing = true
			fmt.Fprintf(stderr, "worker serve child %d: global limit: a flush failed: %v; if Redis %s keeps failing, requests go by -redis-policy %s\n", os.Getpid(), err, g.addr, g.policy)
		case err == nil && failing && flushed:
			failing = false
			fmt.Fprintf(stderr, "worker serve child %d: global limit: Redis %s answers again\n", os.Getpid(), g.addr)
		}
	}
}

// close stops the flush loop, after the flush under way, and closes the
// client.
func (g *serveGlobal) close() error {
	close(g.stop)
	<-g.done
	return g.client.Close()
}

// serveLimits is a child's limiter with -global-rate: the per-client limit
// and the global one through limiter.Combine, local first. A request the
// local limit rejects never reaches the global one; one the global limit
// rejects is not counted by the local one (Combine asks the local limit
// without committing first); an allowed one is counted by both.
type serveLimits struct {
	local  *limiter.Req
	global *serveGlobal
	ls     []limiter.Limiter
}

func newServeLimits(local *limiter.Req, global *serveGlobal) *serveLimits {
	return &serveLimits{local: local, global: global, ls: []limiter.Limiter{local, global}}
}

// Incoming decides on a request for key under both limits.
func (l *serveLimits) Incoming(ctx context.Context, key string, commit bool) (limiter.Decision, error) {
	return l.IncomingN(ctx, key, 1, commit)
}

// IncomingN decides on a request of cost n for key under both limits.
func (l *serveLimits) IncomingN(ctx context.Context, key string, n int64, commit bool) (limiter.Decision, error) {
	if !commit {
		d, err := l.local.IncomingN(ctx, key, n, false)
		if err != nil || !d.Allowed {
			return d, err
		}
		return l.global.IncomingN(ctx, key, n, false)
	}
	return limiter.CombineN(ctx, l.ls, []string{key, key}, n)
}

// Uncommit gives a committed request back to both limits.
func (l *serveLimits) Uncommit(ctx context.Context, key string) error {
	return l.UncommitN(ctx, key, 1)
}

// UncommitN gives a committed request of cost n back to both limits.
func (l *serveLimits) UncommitN(ctx context.Context, key string, n int64) error {
	return errors.Join(l.local.UncommitN(ctx, key, n), l.global.UncommitN(ctx, key, n))
}

// Reset forgets key under the per-client limit. The global limit counts
// every client under one key, which no client's reset clears.
func (l *serveLimits) Reset(ctx context.Context, key string) error {
	return l.local.Reset(ctx, key)
}

// Policy is the per-client policy: the one a client can plan by.
func (l *serveLimits) Policy() limiter.Policy { return l.local.Policy() }
