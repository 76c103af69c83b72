package keyhash

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Sum must be XXH3-64 with a seed exactly: every process of a zone must
// compute the same function, and the seed defends against chosen-key
// flooding only if the function is the real one. testdata/xxh3.txt holds the
// reference library's values (written by testdata/xxh3.py) for every length
// of each of XXH3's paths and across their edges, and for five seeds.
// maxKeyLen is dict.MaxKeyLen, the longest key a zone holds.
const maxKeyLen = 65535

func TestSumIsSeededXXH3(t *testing.T) {
	f, err := os.Open("testdata/xxh3.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lengths := map[int]bool{}
	rows := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		var seed, want uint64
		var n int
		fs := strings.Fields(line)
		if len(fs) == 3 {
			seed, err = strconv.ParseUint(fs[0], 16, 64)
			if err == nil {
				n, err = strconv.Atoi(fs[1])
			}
			if err == nil {
				want, err = strconv.ParseUint(fs[2], 16, 64)
			}
		}
		if len(fs) != 3 || err != nil {
			t.Fatalf("testdata/xxh3.txt: bad line %q", line)
		}
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i*167+n*13+7) ^ byte(i>>3)
		}
		if got := Sum(seed, string(key)); got != want {
			t.Errorf("Sum(%#x, %d bytes) = %#x, want %#x", seed, n, got, want)
		}
		lengths[n] = true
		rows++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every path: 0, 1-3, 4-8, 9-16, 17-32, 33-128, 129-240, and over 240
	// with a partial block, whole blocks and dict's longest key.
	for _, n := range []int{0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 128, 129, 240, 241, 1024, 1025, maxKeyLen} {
		if !lengths[n] {
			t.Errorf("testdata/xxh3.txt has no key of %d bytes", n)
		}
	}
	if rows < 1000 {
		t.Errorf("testdata/xxh3.txt: %d rows", rows)
	}
}
