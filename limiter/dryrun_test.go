package limiter

import (
	"errors"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/zonetest"
)

// dryRunner is what every limiter of the package has for dry runs.
type dryRunner interface {
	SetDryRun(on bool) error
	DryRun() bool
	AddDryRunRejected(n int64) error
	DryRunRejected() (int64, error)
	UnsetLive() error
}

var (
	_ dryRunner = (*Req)(nil)
	_ dryRunner = (*Count)(nil)
	_ dryRunner = (*SlidingWindow)(nil)
	_ dryRunner = (*GCRA)(nil)
	_ dryRunner = (*Conn)(nil)
)

// TestDryRunLive: each kind's live switch turns a dry run on and off, for
// a limiter of the same name built apart, and UnsetLive drops it. The
// count adds up in the zone, and Settings reports both.
func TestDryRunLive(t *testing.T) {
	tests := []struct {
		name  string
		kind  string
		build func(d *dict.Dict) (dryRunner, error)
	}{
		{"req", kindReq, func(d *dict.Dict) (dryRunner, error) { return NewReq(d, "x", 10, 4) }},
		{"count", kindCount, func(d *dict.Dict) (dryRunner, error) { return NewCount(d, "x", 2, time.Minute) }},
		{"sw", kindSW, func(d *dict.Dict) (dryRunner, error) { return NewSlidingWindow(d, "x", 2, time.Minute) }},
		{"gcra", kindGCRA, func(d *dict.Dict) (dryRunner, error) { return NewGCRA(d, "x", 1, 2) }},
		{"conn", kindConn, func(d *dict.Dict) (dryRunner, error) { return NewConn(d, "x", 2, 1, time.Second) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := zonetest.Open(t, dict.Options{})
			a, err := tt.build(d)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.build(d)
			if err != nil {
				t.Fatal(err)
			}
			if a.DryRun() || b.DryRun() {
				t.Fatal("DryRun() = true before any switch")
			}
			if err := a.SetDryRun(true); err != nil {
				t.Fatalf("SetDryRun(true) = %v", err)
			}
			if !b.DryRun() {
				t.Error("DryRun() = false after SetDryRun(true)")
			}
			if err := a.AddDryRunRejected(3); err != nil {
				t.Fatal(err)
			}
			if err := b.AddDryRunRejected(2); err != nil {
				t.Fatal(err)
			}
			if n, err := b.DryRunRejected(); n != 5 || err != nil {
				t.Errorf("DryRunRejected() = %d, %v, want 5", n, err)
			}
			ss, err := Settings(d)
			if err != nil {
				t.Fatal(err)
			}
			if len(ss) != 1 {
				t.Fatalf("Settings = %+v, want one limiter: the count's key is no limiter", ss)
			}
			s := ss[0]
			if !s.InForce.DryRun || !s.Live.DryRun || s.LiveFields != FieldDryRun || s.DryRunRejected != 5 {
				t.Errorf("Settings = %+v, want a live dry run and 5 rejections", s)
			}
			if err := b.SetDryRun(false); err != nil {
				t.Fatal(err)
			}
			if a.DryRun() {
				t.Error("DryRun() = true after SetDryRun(false)")
			}
			if err := a.SetDryRun(true); err != nil {
				t.Fatal(err)
			}
			if err := b.UnsetLive(); err != nil {
				t.Fatal(err)
			}
			if a.DryRun() {
				t.Error("DryRun() = true after UnsetLive")
			}
			if err := a.AddDryRunRejected(0); !errors.Is(err, ErrBadCost) {
				t.Errorf("AddDryRunRejected(0) = %v, want ErrBadCost", err)
			}
		})
	}
}

// TestDryRunKeepsNumbers: a dry run's switch leaves the live numbers, and
// the numbers leave the switch.
func TestDryRunKeepsNumbers(t *testing.T) {
	d, _ := zonetest.Open(t, dict.Options{})
	l, err := NewReq(d, "x", 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetRate(3); err != nil {
		t.Fatal(err)
	}
	if err := l.SetDryRun(true); err != nil {
		t.Fatal(err)
	}
	if err := l.SetBurst(7); err != nil {
		t.Fatal(err)
	}
	if p := l.Policy(); !l.DryRun() || p.Limit != 8 {
		t.Errorf("DryRun() = %v, Policy() = %+v, want true and the live rate 3, burst 7", l.DryRun(), p)
	}
	if err := SetLive(d, kindReq, "x", Numbers{DryRun: false}, FieldDryRun); err != nil {
		t.Fatal(err)
	}
	got := l.tune.numbers()
	if l.DryRun() || got.Rate != 3 || got.Burst != 7 {
		t.Errorf("after SetLive off: DryRun() = %v, numbers = %+v, want false, rate 3, burst 7", l.DryRun(), got)
	}
}

// TestDryRunWord: the switch sits in bit 8 of word 4, between the fields
// and the pid, and reads back only with its field set.
func TestDryRunWord(t *testing.T) {
	l := live{set: liveDryRun | liveRate, dry: true, rate: 2, pid: 1 << 30}
	w := l.words()
	if w[4] != uint64(liveDryRun|liveRate)|liveDryRunOn|1<<62 {
		t.Errorf("word 4 = %#x", w[4])
	}
	if got := liveOf(w); got != l {
		t.Errorf("liveOf(words()) = %+v, want %+v", got, l)
	}
	w[4] &^= liveDryRun
	if liveOf(w).dry {
		t.Error("liveOf reads the switch without its field")
	}
}
