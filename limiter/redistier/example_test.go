package redistier_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/limiter/redistier"
)

// deadAddr returns a loopback address where nothing listens.
func deadAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A client must honour context deadlines, or a hung server would hold every
// decision for the client's ReadTimeout.
func ExampleNewGCRA() {
	c := redis.NewClient(&redis.Options{Addr: deadAddr()})
	defer c.Close()
	_, err := redistier.NewGCRA(c, "api", 10, 10, redistier.Options{})
	fmt.Println(err)
	// Output: redistier: client does not honour context deadlines (set ContextTimeoutEnabled)
}

// With Redis unreachable, the failure policy decides, within the timeout.
func ExampleFailure() {
	c := redis.NewClient(&redis.Options{Addr: deadAddr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	for _, p := range []redistier.Failure{redistier.FailError, redistier.FailOpen, redistier.FailClosed} {
		l, err := redistier.NewReq(c, "zone", "10r/s", 5, 0, redistier.Options{Timeout: 20 * time.Millisecond, OnFailure: p})
		if err != nil {
			panic(err)
		}
		d, err := l.Incoming(ctx, "client-1", true)
		s := l.Stats()
		fmt.Printf("allowed=%v error=%v calls=%d errors=%d fallbacks=%d\n", d.Allowed, err != nil, s.Calls, s.Errors, s.Fallbacks)
	}
	// Output:
	// allowed=false error=true calls=1 errors=1 fallbacks=0
	// allowed=true error=false calls=1 errors=1 fallbacks=1
	// allowed=false error=false calls=1 errors=1 fallbacks=1
}

// A setter refuses what the constructor refuses, before calling Redis.
func ExampleCount_SetLimit() {
	c := redis.NewClient(&redis.Options{Addr: deadAddr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer c.Close()
	l, err := redistier.NewCount(c, "api", 100, time.Minute, redistier.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.SetLimit(context.Background(), 0))
	// Output: limiter: bad limit: 0
}
