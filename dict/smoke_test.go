package dict

import "testing"

func TestSmoke(t *testing.T) {
	d, _ := openTest(t, Options{})
	if _, err := d.Set("foo", Int(32), 0, 7); err != nil {
		t.Fatal(err)
	}
	v, f, err := d.Get("foo")
	if err != nil || v.Int() != 32 || f != 7 {
		t.Fatalf("Get = %v %v %v", v, f, err)
	}
	n, err := d.Incr("foo", 10)
	if n != 42 || err != nil {
		t.Fatalf("Incr = %d %v", n, err)
	}
	if _, err := d.Set("foo", String("hello, world"), 0, 0); err != nil {
		t.Fatal(err)
	}
	v, _, err = d.Get("foo")
	if v.String() != "hello, world" {
		t.Fatalf("Get = %q %v", v, err)
	}
	for i := 0; i < 5000; i++ {
		if _, err := d.Set(string(rune('a'+i%26))+string(rune(i)), Int(int64(i)), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.LPush("l", Int(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RPush("l", String("x")); err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	keys, _ := d.Keys(0)
	t.Logf("%d keys, stats %+v", len(keys), d.Stats())
	for i := range d.shards {
		d.shards[i].hdr().Drop = dropUnreachable
		if err := d.shards[i].repairInShard(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	keys2, _ := d.Keys(0)
	if len(keys2) != len(keys) {
		t.Fatalf("after repair %d keys, want %d", len(keys2), len(keys))
	}
	if err := d.FlushAll(); err != nil {
		t.Fatal(err)
	}
}
