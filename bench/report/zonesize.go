package main

import "fmt"

// zoneSizes are the zones of dict's and limiter's BenchmarkZoneSize, by the
// name their cases carry, smallest first.
var zoneSizes = []string{"10MiB", "64MiB", "256MiB"}

// zoneSizeKeys are the key counts of both BenchmarkZoneSize.
var zoneSizeKeys = []int{1000, 100000}

// zoneSizeOps are the ops of each package's BenchmarkZoneSize, by the id of
// its Go step.
var zoneSizeOps = map[string][]string{
	"dict-zones":    {"incr", "get"},
	"limiter-zones": {"req", "count", "gcra", "sliding"},
}

// zoneSizeName is the name of a BenchmarkZoneSize case.
func zoneSizeName(op string, keys int, zone string) string {
	return fmt.Sprintf("BenchmarkZoneSize/op=%s/keys=%d/zone=%s", op, keys, zone)
}

// zoneSizeTable is a row per op and key count of a step's BenchmarkZoneSize:
// ns/op in each zone, and the biggest zone's over the smallest's.
func (v *view) zoneSizeTable(step, what string) table {
	t := table{head: []string{what, "keys", "10 MiB ns/op", "64 MiB ns/op", "256 MiB ns/op", "256 MiB over 10 MiB"}}
	for _, op := range zoneSizeOps[step] {
		for _, keys := range zoneSizeKeys {
			row := []string{op, commas(float64(keys))}
			for _, z := range zoneSizes {
				row = append(row, ns(v.goVal(step, zoneSizeName(op, keys, z), "ns/op")))
			}
			big, okB := v.goVal(step, zoneSizeName(op, keys, "256MiB"), "ns/op")
			small, okS := v.goVal(step, zoneSizeName(op, keys, "10MiB"), "ns/op")
			t.add(append(row, ratio(big, small, okB && okS))...)
		}
	}
	return t
}

// DictZoneSizes is dict's incr and get by zone size, for the template.
func (v *view) DictZoneSizes() table { return v.zoneSizeTable("dict-zones", "op") }

// LimiterZoneSizes is the limiters' decisions by zone size, for the
// template.
func (v *view) LimiterZoneSizes() table { return v.zoneSizeTable("limiter-zones", "limiter") }

// zoneSizeLimit is the most a bigger zone may cost over a 10 MiB zone on
// dict's 1,000 hot keys.
const zoneSizeLimit = 1.15

// zoneSizeTargets holds a bigger zone to the cost of a 10 MiB one on a small
// hot set: dict incr and get at 1,000 keys, each bigger zone's ns/op over
// the 10 MiB zone's.
func (v *view) zoneSizeTargets() {
	for _, op := range zoneSizeOps["dict-zones"] {
		small, okS := v.goVal("dict-zones", zoneSizeName(op, 1000, "10MiB"), "ns/op")
		for _, z := range []struct{ name, label string }{{"64MiB", "64 MiB"}, {"256MiB", "256 MiB"}} {
			big, okB := v.goVal("dict-zones", zoneSizeName(op, 1000, z.name), "ns/op")
			got := ratio(big, small, okB && okS)
			v.target(fmt.Sprintf("dict %s on 1,000 keys: ns/op at %s over at 10 MiB", op, z.label),
				fmt.Sprintf("≤ %.2f×", zoneSizeLimit), got, shown(got) <= zoneSizeLimit, okB && okS)
		}
	}
}
