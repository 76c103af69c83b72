package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// writeTable prints the report as an aligned table, one row per procs.
func writeTable(w io.Writer, rep report) error {
	if _, err := fmt.Fprintf(w, "backend=%s op=%s keys=%d keyset=%s duration=%s\n", rep.Backend, rep.Op, rep.Keys, rep.Keyset, rep.Duration); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "procs\tops/s\tns/op\tp50\tp99\tp999\tscaling\t")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\t%s\t%.2fx\t\n",
			r.Procs, humanCount(r.OpsPerSec), r.NsPerOp, humanNanos(r.P50), humanNanos(r.P99), humanNanos(r.P999), r.Scaling)
	}
	return tw.Flush()
}

// writeJSON prints the report as indented JSON.
func writeJSON(w io.Writer, rep report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// humanCount writes n with a k, M or G suffix and three significant digits.
func humanCount(n float64) string {
	// Round to three significant digits before choosing the suffix: 999,999
	// is 1M, not 1e+03k.
	if n >= 1 {
		p := math.Pow(10, math.Floor(math.Log10(n))-2)
		n = math.Round(n/p) * p
	}
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.3gk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

// humanNanos writes a latency as a duration of three significant digits,
// rounded once: 1,234,567 ns is 1.23ms.
func humanNanos(ns int64) string {
	d, r := time.Duration(ns), time.Duration(1)
	for d >= 1000*r {
		r *= 10
	}
	return d.Round(r).String()
}

// writeChartFile writes the report's SVG chart to path.
func writeChartFile(path string, rep report) error {
	var b strings.Builder
	writeChart(&b, rep)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 640, 400
	padL, padR     = 80, 20
	padT, padB     = 40, 50
)

// writeChart draws ops/s by procs as bars, with the scaling over each bar:
// a hand-written SVG, one <rect class="point"> per row.
func writeChart(w io.Writer, rep report) {
	var top float64
	for _, r := range rep.Rows {
		top = math.Max(top, r.OpsPerSec)
	}
	top = niceCeil(top)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="24" font-size="15">%s</text>
`, chartW, chartH, chartW, chartH, padL, xmlEscape(fmt.Sprintf("worker bench: %s %s, %d keys, ops/s by processes", rep.Backend, rep.Op, rep.Keys)))
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(padT) + plotH*(1-float64(i)/4)
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>
<text x="%d" y="%.1f" text-anchor="end">%s</text>
`, padL, y, chartW-padR, y, padL-6, y+4, humanCount(v))
	}
	n := max(len(rep.Rows), 1)
	slot := plotW / float64(n)
	for i, r := range rep.Rows {
		h := 0.0
		if top > 0 {
			h = plotH * r.OpsPerSec / top
		}
		x := float64(padL) + slot*float64(i) + slot*0.2
		y := float64(padT) + plotH - h
		fmt.Fprintf(w, `<rect class="point" data-procs="%d" data-ops-per-sec="%.0f" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4878b0"><title>%d procs: %s ops/s</title></rect>
<text x="%.1f" y="%.1f" text-anchor="middle">%.2fx</text>
<text x="%.1f" y="%d" text-anchor="middle">%d</text>
`, r.Procs, r.OpsPerSec, x, y, slot*0.6, h, r.Procs, humanCount(r.OpsPerSec),
			x+slot*0.3, y-5, r.Scaling, x+slot*0.3, chartH-padB+18, r.Procs)
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>
<text x="%.1f" y="%d" text-anchor="middle">processes</text>
</svg>
`, padL, chartH-padB, chartW-padR, chartH-padB, float64(padL)+plotW/2, chartH-10)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
