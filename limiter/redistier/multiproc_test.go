package redistier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
)

// TestHelperProcess runs this package's helper processes (internal/testutil):
// "tiered", one process of a host in testTiered.
func TestHelperProcess(*testing.T) {
	testutil.RunHelper(map[string]func(args []string) error{
		"tiered": helperTiered,
	})
}

// tieredProc is what testTiered tells each helper process: its Redis, its
// host's zone, and its share of the offered requests.
type tieredProc struct {
	Cluster          bool
	Addrs            []string
	Zone, Prefix     string
	Limit            int64
	Window, Interval time.Duration
	Index            int64 // process number over every host, to stagger the requests
	Every, PerMs     int64 // offer PerMs requests every Every ms
}

func (p tieredProc) args() []string {
	return []string{strconv.FormatBool(p.Cluster), strings.Join(p.Addrs, ","), p.Zone, p.Prefix,
		strconv.FormatInt(p.Limit, 10), p.Window.String(), p.Interval.String(),
		strconv.FormatInt(p.Index, 10), strconv.FormatInt(p.Every, 10), strconv.FormatInt(p.PerMs, 10)}
}

func parseTieredProc(a []string) (p tieredProc, err error) {
	if len(a) != 10 {
		return p, fmt.Errorf("want 10 arguments, got %q", a)
	}
	ints := make([]int64, 4)
	for i, s := range []string{a[4], a[7], a[8], a[9]} {
		if ints[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return p, err
		}
	}
	p.Limit, p.Index, p.Every, p.PerMs = ints[0], ints[1], ints[2], ints[3]
	if p.Cluster, err = strconv.ParseBool(a[0]); err != nil {
		return p, err
	}
	p.Addrs, p.Zone, p.Prefix = strings.Split(a[1], ","), a[2], a[3]
	if p.Window, err = time.ParseDuration(a[5]); err != nil {
		return p, err
	}
	p.Interval, err = time.ParseDuration(a[6])
	return p, err
}

// helperTiered is one process of a host: it opens the host's zone and a
// Tiered on the fake clock, and for each step k the test sends (one interval
// of the fake clock) walks the clock through the interval's milliseconds,
// flushing at its start and offering its requests; when the test ends the
// steps it prints "allowed offered flushes".
func helperTiered(args []string) error {
	p, err := parseTieredProc(args)
	if err != nil {
		return err
	}
	clk := new(testutil.Clock)
	d, err := dict.Open(p.Zone, dict.Options{Size: 1 << 20, Clock: clk.UnixMilli})
	if err != nil {
		return err
	}
	defer d.Close()
	var c redis.UniversalClient
	if p.Cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: p.Addrs, ContextTimeoutEnabled: true})
	} else {
		c = redis.NewClient(&redis.Options{Addr: p.Addrs[0], ContextTimeoutEnabled: true})
	}
	defer c.Close()
	l, err := NewTiered(d, c, p.Prefix, p.Limit, p.Window, p.Interval, Options{Now: clk.Now, Timeout: time.Second})
	if err != nil {
		return err
	}
	ctx := context.Background()
	var allowed, offered int64
	iv := p.Interval.Milliseconds()
	err = testutil.FollowSteps(func(step int64) error {
		for ms := step * iv; ms < (step+1)*iv; ms++ {
			clk.Set(time.Duration(ms) * time.Millisecond)
			if ms%iv == 0 {
				if _, err := l.Flush(ctx); err != nil {
					return fmt.Errorf("Flush at +%d ms: %w", ms, err)
				}
			}
			if (ms+p.Index*3)%p.Every != 0 {
				continue
			}
			for k := int64(0); k < p.PerMs; k++ {
				offered++
				dec, err := l.Incoming(ctx, "api", true)
				if err != nil {
					return fmt.Errorf("Incoming at +%d ms: %w", ms, err)
				}
				if dec.Allowed {
					allowed++
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println(allowed, offered, l.flushes.Load())
	return nil
}
