package counter_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmzone/shmzone/counter"
	"github.com/shmzone/shmzone/dict"
)

// openExample creates a 1 MiB zone in a new temporary directory; cleanup
// closes it and removes the directory.
func openExample() (d *dict.Dict, cleanup func()) {
	dir, err := os.MkdirTemp("", "counter-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err = dict.Open(filepath.Join(dir, "counters.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return d, func() {
		d.Close()
		os.RemoveAll(dir)
	}
}

// newExample returns a Counter that syncs by hand over a new zone from
// openExample; cleanup closes both and removes the zone.
func newExample() (c *counter.Counter, d *dict.Dict, cleanup func()) {
	d, closeDict := openExample()
	c, err := counter.New(d, 0)
	if err != nil {
		closeDict()
		log.Fatal(err)
	}
	return c, d, func() {
		c.Close()
		closeDict()
	}
}

func ExampleNew() {
	d, cleanup := openExample()
	defer cleanup()

	// Every process of a service makes its own Counter over the shared
	// zone; a real one would pass an interval such as time.Second.
	c, err := counter.New(d, 0)
	if err != nil {
		log.Fatal(err)
	}
	c.Incr("requests", 1)
	c.Incr("requests", 1)
	c.Incr("bytes", 1500)

	_, err = c.Get("requests")
	fmt.Println(errors.Is(err, dict.ErrNotFound)) // not synced yet
	if err := c.Sync(); err != nil {
		log.Fatal(err)
	}
	n, _ := c.Get("requests")
	b, _ := c.Get("bytes")
	fmt.Println(n, b)

	// Close syncs what is left.
	c.Incr("requests", 1)
	c.Close()
	v, _, _ := d.Get("requests")
	fmt.Println(v)
	// Output:
	// true
	// 2 1500
	// 3
}

func ExampleCounter_Key() {
	c, _, cleanup := newExample()
	defer cleanup()

	// A Handle adds to one key without looking it up: keep it for a hot key.
	status200 := c.Key("status:200")
	for i := 0; i < 1000; i++ {
		status200.Add(1)
	}
	c.Incr("status:200", 1) // the same count
	c.Sync()
	n, _ := c.Get("status:200")
	fmt.Println(n)
	// Output:
	// 1001
}

func ExampleCounter_Sync() {
	c, d, cleanup := newExample()
	defer cleanup()

	// A key that holds bytes cannot take a count: the delta stays in the
	// process, and the next Sync that can write it does.
	d.Set("hits", dict.String("oops"), 0, 0)
	c.Incr("hits", 5)
	err := c.Sync()
	fmt.Println(errors.Is(err, dict.ErrNotNumber), c.Stats().Pending)

	d.Delete("hits")
	c.Incr("hits", 1)
	err = c.Sync()
	n, _ := c.Get("hits")
	fmt.Println(err, n, c.Stats().Pending)
	// Output:
	// true 1
	// <nil> 6 0
}

func ExampleCounter_Reset() {
	c, _, cleanup := newExample()
	defer cleanup()

	c.Incr("window", 18)
	c.Sync()
	// Reset subtracts what was counted, so that counts made meanwhile by
	// other processes survive.
	n, _ := c.Reset("window", 10)
	fmt.Println(n)
	n, _ = c.Reset("absent", 7)
	fmt.Println(n)
	// Output:
	// 8
	// 0
}
