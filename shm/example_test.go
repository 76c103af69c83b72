package shm_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shmzone/shmzone/shm"
)

// Example creates a zone in a temporary directory, formats its first shard,
// and attaches it again read-only, as another process would.
func Example() {
	dir, err := os.MkdirTemp("", "shm-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "example.zone")

	// The file is absent and Size is set: Open creates the zone, and Format
	// lays out its shards before the header makes it visible to others.
	z, err := shm.Open(path, shm.Options{
		Size: 4 << 20,
		Format: func(z *shm.Zone) error {
			copy(z.Shard(0), "hello")
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// The size was rounded down to whole cache lines per shard.
	h := z.Header()
	fmt.Printf("created: %v\n", z.Created())
	fmt.Printf("%d bytes: a %d-byte header page and %d shards of %d bytes\n",
		h.Size, h.ShardOff, h.Shards, h.ShardSize)
	if err := z.Close(); err != nil {
		log.Fatal(err)
	}

	// Any process may attach it; this one maps it read-only.
	z, err = shm.Open(path, shm.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer z.Close()
	fmt.Printf("created: %v, shard 0 begins %q\n", z.Created(), z.Shard(0)[:5])
	// Output:
	// created: true
	// 4182016 bytes: a 4096-byte header page and 4 shards of 1044480 bytes
	// created: false, shard 0 begins "hello"
}
