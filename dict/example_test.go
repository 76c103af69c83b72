package dict_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/shmzone/shmzone/dict"
)

// openExample creates a 1 MiB zone in a new temporary directory; cleanup
// closes it and removes the directory.
func openExample() (d *dict.Dict, cleanup func()) {
	dir, err := os.MkdirTemp("", "dict-example")
	if err != nil {
		log.Fatal(err)
	}
	d, err = dict.Open(filepath.Join(dir, "cache.zone"), dict.Options{Size: 1 << 20})
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return d, func() {
		d.Close()
		os.RemoveAll(dir)
	}
}

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "dict-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cache.zone")

	// The first Open creates the zone; every process that opens the same
	// path later shares it.
	d, err := dict.Open(path, dict.Options{Size: 1 << 20})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := d.Set("greeting", dict.String("hello"), 0, 7); err != nil {
		log.Fatal(err)
	}
	d.Close()

	d, err = dict.Open(path, dict.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	v, flags, err := d.Get("greeting")
	fmt.Println(v, flags, err)
	_, _, err = d.Get("missing")
	fmt.Println(errors.Is(err, dict.ErrNotFound))
	// Output:
	// hello 7 <nil>
	// true
}

func ExampleDict_Set() {
	d, cleanup := openExample()
	defer cleanup()

	d.Set("n", dict.Int(32), 0, 0)
	d.Set("pi", dict.Float(3.14), 0, 0)
	d.Set("ok", dict.Bool(true), 0, 0)
	d.Set("s", dict.String("hello, world"), 0, 199)
	for _, k := range []string{"n", "pi", "ok", "s"} {
		v, flags, _ := d.Get(k)
		fmt.Println(k, v.Kind(), v, flags)
	}
	// Output:
	// n int 32 0
	// pi float 3.14 0
	// ok bool true 0
	// s bytes hello, world 199
}

func ExampleDict_Incr() {
	d, cleanup := openExample()
	defer cleanup()

	d.Set("hits", dict.Int(32), 0, 0)
	n, err := d.Incr("hits", 10502)
	fmt.Println(n, err)
	_, err = d.Incr("absent", 1)
	fmt.Println(err)
	d.Set("name", dict.String("x"), 0, 0)
	_, err = d.Incr("name", 1)
	fmt.Println(err)
	// Output:
	// 10534 <nil>
	// dict: not found
	// dict: not a number
}

func ExampleDict_IncrInit() {
	d, cleanup := openExample()
	defer cleanup()

	// An absent key starts at init; a live one ignores it.
	for i := 0; i < 3; i++ {
		n, _, err := d.IncrInit("requests", 1, 100, 0)
		fmt.Println(n, err)
	}
	// Output:
	// 101 <nil>
	// 102 <nil>
	// 103 <nil>
}

func ExampleDict_Add() {
	d, cleanup := openExample()
	defer cleanup()

	_, err := d.Add("lock", dict.String("owner-1"), 0, 0)
	fmt.Println(err)
	_, err = d.Add("lock", dict.String("owner-2"), 0, 0)
	fmt.Println(err, errors.Is(err, dict.ErrExists))
	v, _, _ := d.Get("lock")
	fmt.Println(v)
	// Output:
	// <nil>
	// dict: exists true
	// owner-1
}

func ExampleDict_LPush() {
	d, cleanup := openExample()
	defer cleanup()

	for i := int64(1); i <= 3; i++ {
		d.LPush("stack", dict.Int(i))
		d.RPush("queue", dict.Int(i))
	}
	n, _ := d.LLen("stack")
	fmt.Println("len", n)
	for {
		v, err := d.LPop("stack")
		if err != nil {
			break
		}
		w, _ := d.LPop("queue")
		fmt.Println(v, w)
	}
	n, _ = d.LLen("stack")
	fmt.Println("len", n)
	_, _, err := d.Get("queue")
	fmt.Println(err)
	// Output:
	// len 3
	// 3 1
	// 2 2
	// 1 3
	// len 0
	// dict: not found
}

func ExampleDict_Update() {
	d, cleanup := openExample()
	defer cleanup()

	// visit appends a page to the pages stored under a user's key. fn may
	// be called twice, so it computes its result from its arguments alone.
	visit := func(user, page string) error {
		return d.Update(user, func(cur dict.Value, ok bool) (dict.Value, time.Duration, bool) {
			if !ok {
				return dict.String(page), time.Hour, true
			}
			// cur aliases the zone and has no spare capacity: the append
			// copies it.
			return dict.Bytes(append(cur.Bytes(), ","+page...)), time.Hour, true
		})
	}
	for _, page := range []string{"/home", "/cart", "/pay"} {
		if err := visit("alice", page); err != nil {
			log.Fatal(err)
		}
	}
	v, _, err := d.Get("alice")
	fmt.Println(v, err)

	// keep false deletes the key.
	err = d.Update("alice", func(dict.Value, bool) (dict.Value, time.Duration, bool) {
		return dict.Value{}, 0, false
	})
	_, _, getErr := d.Get("alice")
	fmt.Println(err, errors.Is(getErr, dict.ErrNotFound))
	// Output:
	// /home,/cart,/pay <nil>
	// <nil> true
}

func ExampleDict_Mutate() {
	d, cleanup := openExample()
	defer cleanup()

	// record adds a response of n bytes to a 16-byte state: a count of
	// responses, then their total size. A new key's b is zeroed.
	record := func(key string, n uint64) error {
		return d.Mutate(key, 16, time.Minute, func(b []byte, found bool) bool {
			le := binary.LittleEndian
			le.PutUint64(b[0:8], le.Uint64(b[0:8])+1)
			le.PutUint64(b[8:16], le.Uint64(b[8:16])+n)
			return true // keep the entry if it is new
		})
	}
	for _, n := range []uint64{100, 250, 50} {
		if err := record("client", n); err != nil {
			log.Fatal(err)
		}
	}
	v, _, err := d.Get("client")
	if err != nil {
		log.Fatal(err)
	}
	b := v.Bytes()
	fmt.Println(binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16]))

	// A value of another size is refused before fn is called.
	err = d.Mutate("client", 8, 0, func([]byte, bool) bool { return true })
	fmt.Println(errors.Is(err, dict.ErrWrongShape))
	// Output:
	// 3 400
	// true
}
