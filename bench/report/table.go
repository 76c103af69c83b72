package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// table is a markdown table: its first column is left-aligned, the others
// right-aligned (they hold figures).
type table struct {
	head []string
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t table) String() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n|")
	for i := range t.head {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// missing marks a cell the run did not measure.
const missing = "—"

// ns formats nanoseconds per op: one decimal below 1,000.
func ns(v float64, ok bool) string {
	switch {
	case !ok:
		return missing
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 1000:
		return fmt.Sprintf("%.1f", v)
	default:
		return commas(v)
	}
}

// latency formats a latency in nanoseconds with its unit.
func latency(v float64, ok bool) string {
	switch {
	case !ok:
		return missing
	case v < 1000:
		return fmt.Sprintf("%.0f ns", v)
	case v < 1e6:
		return fmt.Sprintf("%.1f µs", v/1e3)
	default:
		return fmt.Sprintf("%.2f ms", v/1e6)
	}
}

// rate formats operations per second.
func rate(v float64, ok bool) string {
	switch {
	case !ok:
		return missing
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	default:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
}

// ratio formats a over b as "1.23×".
func ratio(a, b float64, ok bool) string {
	if !ok || b <= 0 || a <= 0 {
		return missing
	}
	r := a / b
	switch {
	case r >= 100:
		return commas(r) + "×"
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

// shown reads back the number a cell of ns, ratio or commas shows, so that
// a verdict judges the figure the page prints: 30.04 ns/op shows as "30.0"
// and meets "≤ 30 ns". It is NaN for a missing cell.
func shown(cell string) float64 {
	x, err := strconv.ParseFloat(strings.TrimSuffix(strings.ReplaceAll(cell, ",", ""), "×"), 64)
	if err != nil {
		return math.NaN()
	}
	return x
}

// shownRate returns the rate a cell of rate shows ("272.3 k" is 272,300),
// and NaN for any other cell.
func shownRate(cell string) float64 {
	num, unit, _ := strings.Cut(cell, " ")
	scale := map[string]float64{"k": 1e3, "M": 1e6}[unit]
	if scale == 0 {
		return math.NaN()
	}
	return shown(num) * scale
}

// commas rounds v to an integer and groups its digits by thousands.
func commas(v float64) string {
	s := fmt.Sprintf("%.0f", math.Round(v))
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
