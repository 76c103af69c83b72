package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// chartStep is the scaling chart: a worker bench run of zone incr at
// -procs 1,2,4 drawn by its -chart flag, and whether a browser drew it.
type chartStep struct {
	Command string      `json:"command"`
	Rows    []matrixRow `json:"rows"`
	SVG     string      `json:"svg"`
	// Browser is the browser that rendered the SVG ("" when none is
	// installed), Drawn the share of the rendered pixels that are not
	// white, and Width×Height the size of the rendering.
	Browser string  `json:"browser,omitempty"`
	Drawn   float64 `json:"drawn,omitempty"`
	Width   int     `json:"width,omitempty"`
	Height  int     `json:"height,omitempty"`
}

// chartProcs are the process counts of the chart: past the CPU count on a
// small machine, to show what oversubscription does.
const chartProcs = "1,2,4"

func (m *measurer) chart(ctx context.Context, res *results) error {
	svg := filepath.Join(m.tmp, "scaling.svg")
	args := []string{"bench", "-backend", "zone", "-op", "incr", "-procs", chartProcs, "-keys", "1000",
		"-duration", m.c.duration.String(), "-json", "-chart", svg}
	shown := append(args[:len(args)-1:len(args)-1], "bench/scaling.svg")
	res.Chart.Command = "worker " + shellJoin(shown)
	m.prog.step(res.Chart.Command)
	out, err := m.run(ctx, m.c.root, nil, m.worker, args...)
	if err != nil {
		return err
	}
	var wr workerReport
	if err := decodeJSON(out, &wr, res.Chart.Command); err != nil {
		return err
	}
	if res.Chart.Rows, err = medianRows([]workerReport{wr}); err != nil {
		return err
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		return err
	}
	res.Chart.SVG = string(b)

	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := m.look(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		m.prog.skip("render the chart in a browser", "no chromium on PATH")
		res.Missing = append(res.Missing, "the chart was not opened in a browser: no chromium on PATH (apt-get install chromium)")
		return nil
	}
	m.prog.step("render the chart in headless " + filepath.Base(browser))
	shot := filepath.Join(m.tmp, "scaling.png")
	if _, err := m.run(ctx, m.tmp, nil, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=640,400",
		"--user-data-dir="+filepath.Join(m.tmp, "browser"),
		"--screenshot="+shot, "file://"+svg); err != nil {
		return err
	}
	w, h, drawn, err := inkOf(shot)
	if err != nil {
		return fmt.Errorf("%s rendered the chart as an unreadable PNG: %w", browser, err)
	}
	if drawn < 0.01 {
		return fmt.Errorf("%s rendered the chart blank (%.2f%% of its pixels drawn)", browser, 100*drawn)
	}
	res.Chart.Browser = browserVersion(ctx, m.run, browser)
	res.Chart.Drawn, res.Chart.Width, res.Chart.Height = drawn, w, h
	return nil
}

// inkOf decodes a PNG and returns its size and the share of its pixels that
// are not white.
func inkOf(path string) (w, h int, drawn float64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, 0, 0, err
	}
	r := img.Bounds()
	var ink int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !white(img, x, y) {
				ink++
			}
		}
	}
	n := r.Dx() * r.Dy()
	if n == 0 {
		return 0, 0, 0, fmt.Errorf("empty image")
	}
	return r.Dx(), r.Dy(), float64(ink) / float64(n), nil
}

func white(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r > 0xf000 && g > 0xf000 && b > 0xf000
}

func browserVersion(ctx context.Context, run runner, browser string) string {
	out, err := run(ctx, "", nil, browser, "--version")
	if err != nil {
		return filepath.Base(browser)
	}
	return strings.TrimSpace(string(out))
}

// itoa is strconv.Itoa, for the templates.
func itoa(n int) string { return strconv.Itoa(n) }
