package dict

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scanAll returns what Scan reports, as text sorted by key.
func scanAll(t *testing.T, d *Dict) []string {
	t.Helper()
	var out []string
	err := d.Scan(func(it Item) bool {
		line := it.Key + " " + it.Value.Kind().String() + " " + it.Value.String()
		for _, v := range it.List {
			line += " " + v.Kind().String() + ":" + v.String()
		}
		line += " flags=" + strconv.Itoa(int(it.Flags)) + " ttl=" + it.TTL.String()
		out = append(out, line)
		return true
	})
	if err != nil {
		t.Fatalf("Scan = %v", err)
	}
	sort.Strings(out)
	return out
}

func TestScan(t *testing.T) {
	d, c := openTest(t, Options{Size: 1 << 20, Shards: 4})
	big := strings.Repeat("x", 3000) // larger than any first guess of the buffer
	d.Set("b", String("hello"), 0, 7)
	d.Set("bin", Bytes([]byte{0, 0xff, '\n'}), 0, 0)
	d.Set("i", Int(-42), 10*time.Second, 1)
	d.Set("f", Float(2.5), 0, 0)
	d.Set("t", Bool(true), 1500*time.Millisecond, 0)
	d.Set("big", String(big), 0, 0)
	d.Set("gone", Int(1), time.Second, 0)
	d.RPush("l", Int(1))
	d.RPush("l", String("two"))
	d.RPush("l", Bool(false))
	d.Expire("l", time.Minute)
	c.Advance(time.Second) // "gone" expires

	got := scanAll(t, d)
	want := []string{
		"b bytes hello flags=7 ttl=0s",
		"big bytes " + big + " flags=0 ttl=0s",
		"bin bytes \x00\xff\n flags=0 ttl=0s",
		"f float 2.5 flags=0 ttl=0s",
		"i int -42 flags=1 ttl=9s",
		"l list (list) int:1 bytes:two bool:false flags=0 ttl=59s",
		"t bool true flags=0 ttl=500ms",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Scan =\n%q\nwant\n%q", got, want)
	}
	if n, _ := d.LLen("l"); n != 3 {
		t.Errorf("LLen(l) after Scan = %d, want 3", n)
	}
	if st := d.Stats(); st.Hits != 0 || st.Misses != 0 {
		t.Errorf("Scan counted hits %d, misses %d; want none", st.Hits, st.Misses)
	}
}

func TestScanStops(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20, Shards: 4})
	for i := 0; i < 100; i++ {
		d.Set("k"+string(rune('a'+i%26))+strconv.Itoa(i), Int(int64(i)), 0, 0)
	}
	n := 0
	if err := d.Scan(func(Item) bool { n++; return n < 10 }); err != nil {
		t.Fatalf("Scan = %v", err)
	}
	if n != 10 {
		t.Errorf("Scan called fn %d times after it returned false at 10", n)
	}
}

// TestScanGrows writes more than the first shard's buffer holds into a later
// shard, so that Scan must grow its buffer and copy again.
func TestScanGrows(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20, Shards: 2})
	want := map[string]string{}
	for i := 0; i < 300; i++ {
		k := "key-" + strconv.Itoa(i)
		v := strings.Repeat(string(rune('a'+i%26)), i)
		d.Set(k, String(v), 0, 0)
		want[k] = v
	}
	got := map[string]string{}
	err := d.Scan(func(it Item) bool {
		if _, dup := got[it.Key]; dup {
			t.Errorf("Scan reported %q twice", it.Key)
		}
		got[it.Key] = it.Value.String()
		return true
	})
	if err != nil {
		t.Fatalf("Scan = %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Scan reported %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Scan: %s = %d bytes, want %d", k, len(got[k]), len(v))
		}
	}
}

func TestLRange(t *testing.T) {
	d, c := openTest(t, Options{Size: 1 << 20, Shards: 1})
	big := bytes.Repeat([]byte{0xfe}, 5000)
	d.RPush("l", Int(1))
	d.RPush("l", Float(0.5))
	d.RPush("l", Bytes(big))
	d.LPush("l", Bool(true))
	d.Set("v", Int(1), 0, 0)
	d.RPush("short", Int(1))
	d.Expire("short", time.Second)
	c.Advance(time.Second)

	tests := []struct {
		key  string
		want string
		err  error
	}{
		{"l", "bool:true int:1 float:0.5 bytes:" + string(big), nil},
		{"absent", "", nil},
		{"short", "", nil}, // expired
		{"v", "", ErrNotList},
		{"", "", ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			vs, err := d.LRange(tt.key)
			var parts []string
			for _, v := range vs {
				parts = append(parts, v.Kind().String()+":"+v.String())
			}
			if got := strings.Join(parts, " "); got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("LRange(%q) = %.40q, %v; want %.40q, %v", tt.key, got, err, tt.want, tt.err)
			}
		})
	}
	if n, _ := d.LLen("l"); n != 4 {
		t.Errorf("LLen(l) after LRange = %d, want 4", n)
	}
	vs, _ := d.LRange("l")
	vs[3].Bytes()[0] = 0 // the caller's own: the zone keeps its byte
	if again, _ := d.LRange("l"); again[3].Bytes()[0] != 0xfe {
		t.Errorf("a write to LRange's bytes reached the zone")
	}
}

// TestIterReadOnly reads a zone through a read-only view with Scan and
// LRange, and checks that the file's bytes did not change.
func TestIterReadOnly(t *testing.T) {
	d, c := openTest(t, Options{Size: 1 << 20, Shards: 2})
	path := d.Path()
	d.Set("a", String("x"), time.Minute, 3)
	d.RPush("l", String("y"))
	d.Close()
	before := fileSum(t, path)

	ro, err := Open(path, Options{ReadOnly: true, Clock: c.UnixMilli})
	if err != nil {
		t.Fatalf("Open(ReadOnly) = %v", err)
	}
	defer ro.Close()
	got := scanAll(t, ro)
	want := []string{"a bytes x flags=3 ttl=1m0s", "l list (list) bytes:y flags=0 ttl=0s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Scan(read-only) = %q, want %q", got, want)
	}
	if vs, err := ro.LRange("l"); len(vs) != 1 || err != nil {
		t.Errorf("LRange(read-only) = %v, %v; want [y]", vs, err)
	}
	if after := fileSum(t, path); after != before {
		t.Errorf("read-only Scan and LRange changed the zone file")
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestScanCorrupt breaks a shard's eviction queue: Scan reports ErrCorrupt.
func TestScanCorrupt(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20, Shards: 1})
	d.Set("a", Int(1), 0, 0)
	d.shards[0].hdr().QueueTail = 3 // misaligned: no entry starts there
	if err := d.Scan(func(Item) bool { return true }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Scan of a broken queue = %v, want ErrCorrupt", err)
	}
}

// TestScanLockedAllocs proves that copying a shard out under its lock
// allocates nothing once the buffer is large enough.
func TestScanLockedAllocs(t *testing.T) {
	d, _ := openTest(t, Options{Size: 1 << 20, Shards: 1})
	for i := 0; i < 50; i++ {
		d.Set("k"+strconv.Itoa(i), String("value"), 0, 0)
	}
	d.RPush("l", Int(1))
	s := &d.shards[0]
	var c copyBuf
	c.reset()
	d.scanInShard(s, 0, &c)
	c.grow()
	allocs := testing.AllocsPerRun(100, func() {
		c.reset()
		d.lock(s)
		d.scanInShard(s, 0, &c)
		d.unlock(s)
	})
	if allocs != 0 || c.full {
		t.Errorf("scanInShard: %v allocations (full %v), want 0", allocs, c.full)
	}
}
