package keyhash

import (
	"bufio"
	"math/rand/v2"
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

// Sum2 must equal Sum of the joined key at every length and every split,
// so that a key hashed in two parts lands where its whole form does. The
// lengths cover each of Sum's paths and the joined fallback over 240 bytes.
func TestSum2IsSumOfJoined(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	key := make([]byte, 300)
	for i := range key {
		key[i] = byte(r.Uint32())
	}
	seeds := []uint64{0, 1, 0x1234567, 0x9E3779B185EBCA87, ^uint64(0), r.Uint64()}
	for n := 0; n <= len(key); n++ {
		s := string(key[:n])
		for _, seed := range seeds {
			want := Sum(seed, s)
			for i := 0; i <= n; i++ {
				if got := Sum2(seed, s[:i], s[i:]); got != want {
					t.Fatalf("Sum2(%#x, %d bytes, %d bytes) = %#x, want Sum's %#x", seed, i, n-i, got, want)
				}
			}
		}
	}
}

// FuzzSum2 checks Sum2 against Sum of the joined key.
func FuzzSum2(f *testing.F) {
	f.Add(uint64(0), "", "")
	f.Add(uint64(1), "a", "b")
	f.Add(uint64(0x1234567), "count|t|", "key:00000000001")
	f.Add(uint64(0x1234567), "req|a|", "key:00000000001")
	f.Add(^uint64(0), "session|user|", "0123456789abcdef0123456789a")
	f.Add(uint64(7), strings.Repeat("x", 100), strings.Repeat("y", 60))
	f.Add(uint64(9), strings.Repeat("p", 3), strings.Repeat("q", 250))
	f.Fuzz(func(t *testing.T, seed uint64, a, b string) {
		if got, want := Sum2(seed, a, b), Sum(seed, a+b); got != want {
			t.Fatalf("Sum2(%#x, %q, %q) = %#x, want Sum's %#x", seed, a, b, got, want)
		}
	})
}

// Sum2 joins only keys over 240 bytes, and those on the stack up to 256.
func TestSum2DoesNotAllocate(t *testing.T) {
	key := strings.Repeat("0123456789abcdef", 16)
	for _, n := range []int{0, 5, 12, 24, 40, 200, 250, 256} {
		a, b := key[:n/3], key[n/3:n]
		if allocs := testing.AllocsPerRun(100, func() { sink = Sum2(1, a, b) }); allocs != 0 {
			t.Errorf("Sum2 of %d and %d bytes: %v allocations", len(a), len(b), allocs)
		}
	}
}
