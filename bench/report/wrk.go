package main

import (
	"fmt"
	"regexp"
	"strconv"
)

// wrkResult is what the report reads of wrk's output.
type wrkResult struct {
	requests     int64
	non2xx       int64 // responses neither 2xx nor 3xx
	reqPerSec    float64
	socketErrors int64 // connect, read, write and timeout errors together
}

var (
	wrkRequestsRE = regexp.MustCompile(`(?m)^\s*(\d+) requests in [\d.]+\w+, `)
	wrkRateRE     = regexp.MustCompile(`(?m)^Requests/sec:\s+([\d.]+)\s*$`)
	wrkNon2xxRE   = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)\s*$`)
	wrkSocketRE   = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)\s*$`)
)

// parseWrk reads the summary wrk prints. The requests and the rate are
// required: without them the output is not wrk's. The lines of non-2xx
// responses and of socket errors appear only when there are some.
func parseWrk(out []byte) (wrkResult, error) {
	var w wrkResult
	m := wrkRequestsRE.FindSubmatch(out)
	if m == nil {
		return w, fmt.Errorf("no \"N requests in\" line in wrk's output:\n%s", out)
	}
	w.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	m = wrkRateRE.FindSubmatch(out)
	if m == nil {
		return w, fmt.Errorf("no Requests/sec line in wrk's output:\n%s", out)
	}
	var err error
	if w.reqPerSec, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return w, fmt.Errorf("Requests/sec: %w", err)
	}
	if w.requests <= 0 || w.reqPerSec <= 0 {
		return w, fmt.Errorf("wrk completed no request:\n%s", out)
	}
	if m = wrkNon2xxRE.FindSubmatch(out); m != nil {
		w.non2xx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m = wrkSocketRE.FindSubmatch(out); m != nil {
		for _, f := range m[1:] {
			n, _ := strconv.ParseInt(string(f), 10, 64)
			w.socketErrors += n
		}
	}
	return w, nil
}
