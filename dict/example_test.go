package dict_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

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
