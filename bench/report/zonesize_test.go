package main

import (
	"strings"
	"testing"
)

// TestZoneSizeTargets checks the verdicts of the zone-size targets: on the
// fixture's rows, at the limit as the page shows it, and without the step.
func TestZoneSizeTargets(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	const incr64, incr256 = "dict incr on 1,000 keys: ns/op at 64 MiB", "dict incr on 1,000 keys: ns/op at 256 MiB"
	// The fixture: incr 30.42 at 10 MiB, 33.07 at 64 MiB, 36.91 at 256 MiB.
	if got := targetVerdict(t, res, incr64); got != "1.09× holds" {
		t.Errorf("%s = %q, want 1.09× holds", incr64, got)
	}
	if got := targetVerdict(t, res, incr256); got != "1.21× **missed**" {
		t.Errorf("%s = %q, want 1.21× **missed**", incr256, got)
	}
	smp := res.Go["dict-zones"].Samples
	smp[zoneSizeName("incr", 1000, "256MiB")]["ns/op"] = []float64{30.42 * 1.1504}
	if got := targetVerdict(t, res, incr256); got != "1.15× holds" {
		t.Errorf("%s shown as the limit = %q, want 1.15× holds", incr256, got)
	}
	delete(smp, zoneSizeName("incr", 1000, "10MiB"))
	if got := targetVerdict(t, res, incr64); got != "— not measured" {
		t.Errorf("%s without the 10 MiB case = %q, want not measured", incr64, got)
	}
	delete(res.Go, "dict-zones")
	const get256 = "dict get on 1,000 keys: ns/op at 256 MiB"
	if got := targetVerdict(t, res, get256); got != "— not measured" {
		t.Errorf("%s without the step = %q, want not measured", get256, got)
	}
}

// TestZoneSizeTables: a row per op and key count, a dash for a case not
// measured, and every row without the step.
func TestZoneSizeTables(t *testing.T) {
	res, err := readResults("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	v := &view{results: res}
	lim := v.LimiterZoneSizes()
	if len(lim.rows) != 8 {
		t.Fatalf("limiter zone-size table has %d rows, want 8", len(lim.rows))
	}
	// The fixture has no sliding case at 100,000 keys in 256 MiB.
	if got := strings.Join(lim.rows[7], " | "); got != "sliding | 100,000 | 205.3 | 219.6 | — | —" {
		t.Errorf("sliding at 100,000 keys = %q", got)
	}
	delete(res.Go, "dict-zones")
	d := v.DictZoneSizes()
	if len(d.rows) != 4 {
		t.Fatalf("dict zone-size table without its step has %d rows, want 4", len(d.rows))
	}
	for _, r := range d.rows {
		if got := strings.Join(r[2:], " "); got != "— — — —" {
			t.Errorf("row %q without the step, want dashes", r)
		}
	}
	if _, err := render(res); err != nil {
		t.Errorf("render without dict-zones: %v", err)
	}
}
