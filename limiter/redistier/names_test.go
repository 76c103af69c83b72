package redistier

import (
	"errors"
	"testing"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/internal/testutil"
	"github.com/shmzone/shmzone/limiter"
)

// TestTieredPrefixIsAName: a Tiered keeps its host's counts under
// "tier|prefix|…" in the zone, a namespace beside the local limiters', so a
// prefix that would let two namespaces meet ('|') is refused before
// anything else is checked.
func TestTieredPrefixIsAName(t *testing.T) {
	d, err := dict.Open(testutil.TempZone(t), dict.Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	for _, prefix := range []string{"", "a|b", "tab\t"} {
		if _, err := NewTiered(d, nil, prefix, 10, time.Second, 100*time.Millisecond, Options{}); !errors.Is(err, limiter.ErrBadName) {
			t.Errorf("NewTiered(prefix %q) = %v, want limiter.ErrBadName", prefix, err)
		}
	}
	if _, err := NewTiered(d, nil, "ok", 10, time.Second, 100*time.Millisecond, Options{}); !errors.Is(err, ErrNilClient) {
		t.Errorf("NewTiered(prefix %q, nil client) = %v, want ErrNilClient", "ok", err)
	}
}
