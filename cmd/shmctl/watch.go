package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/shmzone/shmzone/dict"
	"github.com/shmzone/shmzone/shm"
)

var watchCmd = &command{
	name:    "watch",
	args:    "ZONE",
	summary: "print live figures and rates every second",
	help: `Watch samples a zone's figures every --interval and prints its entries
(and how many are protected: used again, evicted last), free space and the
rate per second of each counter since the last sample (lost: keys written
anew while their evicted entry would still have been live),
until interrupted or --count samples; --key adds a key's value (and for a
number, its change per second). On a terminal it redraws one screen;
otherwise (a pipe, a file) it writes a plain line per sample, no control
codes. Watch opens the zone read-only. Before each sample it checks that
ZONE still names the file it opened: when the zone was removed (shmctl rm)
or replaced (removed and created anew, or another file moved there), it
stops with exit 3, as the zone it watched is no longer there.

  shmctl watch app --key hits`,
	min: 1, max: 1,
	flags: func(fs *flag.FlagSet) func(*env, []string) error {
		interval := fs.Duration("interval", time.Second, "time between samples")
		count := fs.Int("count", 0, "stop after this many samples; 0 = until interrupted")
		asJSON := fs.Bool("json", false, "write a JSON object a sample: the figures and their rates per second")
		key := fs.String("key", "", "also show this key's value at each sample")
		return func(e *env, args []string) error {
			if *interval <= 0 || *count < 0 {
				return usagef("--interval must be positive and --count not negative")
			}
			// The file ZONE names before and after the open is the one
			// opened (the open checks that the path names it): one that
			// changed meanwhile was replaced.
			path := shm.Path(args[0])
			before, _ := os.Lstat(path)
			d, err := e.openRead(args[0])
			if err != nil {
				return err
			}
			defer d.Close()
			w := watcher{e: e, d: d, interval: *interval, json: *asJSON, key: *key}
			if w.file, err = os.Lstat(path); err != nil {
				return zoneGone(path, err)
			}
			if before == nil || !os.SameFile(before, w.file) {
				return fmt.Errorf("%w: %s names another file than it did a moment ago", errZoneReplaced, humanKey(path))
			}
			return w.run(*count)
		}
	},
}

type watcher struct {
	e        *env
	d        *dict.Dict
	file     os.FileInfo // the zone's file, to tell whether its path still names it
	interval time.Duration
	json     bool
	key      string // "" for none
}

// watchSample is one sample of watch --json.
type watchSample struct {
	TimeMs int64 `json:"time_ms"` // Unix ms
	jsonStats
	PerSecond jsonRates `json:"per_second"`    // since the previous sample
	Key       *jsonItem `json:"key,omitempty"` // --key's, absent when the key is
}

// jsonRates are the counters' rates per second, in the order of counters.
type jsonRates struct {
	Hits        float64 `json:"hits"`
	Misses      float64 `json:"misses"`
	Writes      float64 `json:"writes"`
	Evictions   float64 `json:"evictions"`
	Lost        float64 `json:"lost"`
	Expirations float64 `json:"expirations"`
	LockWaits   float64 `json:"lock_waits"`
	Recoveries  float64 `json:"recoveries"`
	Moves       float64 `json:"moves"`
}

func (w *watcher) run(count int) error {
	sleep := w.e.sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	// Rates divide by the monotonic interval: a step of the wall clock
	// (NTP, a manual change) would give wrong, negative or no rates. The
	// wall clock only stamps a sample (time_ms).
	prev, then := statsOf(w.d.Stats()), w.e.monoNow()
	prevKey, _ := w.readKey()
	if !w.e.terminal && !w.json {
		fmt.Fprintf(w.e.stdout, "%10s %10s %10s %9s %9s %9s %9s %9s %9s %9s %9s %9s",
			"entries", "protected", "free", "hits/s", "misses/s", "writes/s", "evict/s", "lost/s", "expire/s", "waits/s", "recov/s", "moves/s")
		if w.key != "" {
			fmt.Fprintf(w.e.stdout, "  %s", humanKey(w.key))
		}
		fmt.Fprintln(w.e.stdout)
	}
	for i := 0; count == 0 || i < count; i++ {
		sleep(w.interval)
		if err := w.stillThere(); err != nil {
			return err
		}
		cur, mono, now := statsOf(w.d.Stats()), w.e.monoNow(), w.e.now()
		rates := perSecond(prev, cur, mono-then)
		key, keyErr := w.readKey()
		keyText := w.keyText(prevKey, key, keyErr, mono-then)
		var err error
		switch {
		case w.json:
			s := watchSample{TimeMs: now, jsonStats: cur,
				PerSecond: jsonRates{rates[0], rates[1], rates[2], rates[3], rates[4], rates[5], rates[6], rates[7], rates[8]}}
			if w.key != "" && keyErr == nil {
				j := key.json(true)
				s.Key = &j
			}
			err = writeJSON(w.e.stdout, s, false)
		case w.e.terminal:
			err = w.screen(cur, rates, keyText)
		default:
			_, err = fmt.Fprintf(w.e.stdout, "%10d %10d %10s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f%s\n",
				cur.Entries, cur.Protected, formatSize(cur.Free),
				rates[0], rates[1], rates[2], rates[3], rates[4], rates[5], rates[6], rates[7], rates[8], keyText)
		}
		if err != nil {
			return err
		}
		prev, then, prevKey = cur, mono, key
	}
	return nil
}

// errZoneRemoved and errZoneReplaced are returned by watch when ZONE no
// longer names the file it opened: the zone it watches is not there to
// watch. Both exit 3, no such zone.
var (
	errZoneRemoved  = errors.New("zone removed")
	errZoneReplaced = errors.New("zone replaced")
)

// stillThere returns an error when the zone's path no longer names the file
// watch opened, which the mapping keeps, unchanging, after a removal.
func (w *watcher) stillThere() error {
	path := w.d.Path()
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return zoneGone(path, err)
	case !os.SameFile(fi, w.file):
		return fmt.Errorf("%w: %s names another file than the zone watched", errZoneReplaced, humanKey(path))
	}
	return nil
}

// zoneGone is the error of a zone's path that names no file: removed, or
// another error from Lstat.
func zoneGone(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s names no file", errZoneRemoved, humanKey(path))
	}
	return &zoneError{path, err}
}

// readKey reads --key's value, if there is a --key.
func (w *watcher) readKey() (item, error) {
	if w.key == "" {
		return item{}, nil
	}
	return readItem(w.d, w.key)
}

// keyText describes --key's value for people, "" without --key: the value,
// and for a number its change per second over the interval since the last
// sample.
func (w *watcher) keyText(prev, cur item, err error, interval time.Duration) string {
	switch {
	case w.key == "":
		return ""
	case err != nil:
		return "  (absent)"
	}
	text := "  " + cur.human()
	if isNumber(prev.value) && isNumber(cur.value) && interval > 0 {
		text += fmt.Sprintf(" (%+.1f/s)", (cur.value.Float()-prev.value.Float())/interval.Seconds())
	}
	return text
}

func isNumber(v dict.Value) bool { return v.Kind() == dict.KindInt || v.Kind() == dict.KindFloat }

// perSecond returns each counter's rate between two samples interval
// apart.
func perSecond(prev, cur jsonStats, interval time.Duration) []float64 {
	p, c := prev.counters(), cur.counters()
	rates := make([]float64, len(c))
	if interval <= 0 {
		return rates
	}
	for i := range c {
		rates[i] = float64(c[i].n-p[i].n) / interval.Seconds()
	}
	return rates
}

// screen redraws the terminal: home, clear, then the figures.
func (w *watcher) screen(cur jsonStats, rates []float64, keyText string) error {
	out := w.e.stdout
	fmt.Fprint(out, "\x1b[H\x1b[2J")
	fmt.Fprintf(out, "shmctl watch %s, every %v (Ctrl-C stops)\n\n", humanKey(w.d.Path()), w.interval)
	fmt.Fprintf(out, "%-12s %14d\n%-12s %14d\n%-12s %14s\n\n",
		"entries", cur.Entries, "protected", cur.Protected, "free", formatSize(cur.Free))
	fmt.Fprintf(out, "%-12s %14s %12s\n", "", "total", "per second")
	for i, c := range cur.counters() {
		fmt.Fprintf(out, "%-12s %14d %12.1f\n", c.name, c.n, rates[i])
	}
	if w.key != "" {
		fmt.Fprintf(out, "\nkey %s%s\n", humanKey(w.key), keyText)
	}
	return nil
}
