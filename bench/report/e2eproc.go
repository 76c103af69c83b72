package main

// e2eproc.go: an e2eserver process, started until it says it is ready,
// and the CPU time of its processes, read from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// e2eServer is a started server.
type e2eServer struct {
	pids []int // the master's, then its children's
	stop func() error
}

// e2eReadyWait bounds the wait for a server's ready line. It guards against
// a hang and measures nothing.
const e2eReadyWait = 2 * time.Minute

// e2eStopWait is how long a server may take to drain before it is killed.
const e2eStopWait = 30 * time.Second

// tailBuffer keeps what a process writes, for the error that reports its
// failure.
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.Write(p)
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.b.String()
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// startE2EServer starts bin with args and waits for its line "ready
// children=PID,…". stop sends it SIGTERM, waits for it to drain, and
// returns an error if it did not exit 0.
func startE2EServer(ctx context.Context, bin string, args []string) (*e2eServer, error) {
	cmd := exec.Command(bin, args...)
	var stderr tailBuffer
	cmd.Stderr = &stderr
	// Wait need not wait for a child that outlives the master and holds
	// stderr open.
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	w.Close() // the server holds the only write end: EOF when it ends
	ready := make(chan string, 1)
	eof := make(chan struct{}) // closed when every process closed stdout
	var out tailBuffer
	go func() {
		defer close(eof)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			out.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, "ready children=") {
				select {
				case ready <- line:
				default:
				}
			}
		}
		io.Copy(io.Discard, r)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var exitErr error
	done := false
	stop := func() error {
		if done {
			return exitErr
		}
		done = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case exitErr = <-exited:
		case <-time.After(e2eStopWait):
			cmd.Process.Kill()
			<-exited
			exitErr = fmt.Errorf("did not drain within %v", e2eStopWait)
		}
		if exitErr != nil {
			exitErr = fmt.Errorf("%w\n%s%s", exitErr, out.String(), stderr.String())
		}
		return exitErr
	}
	fail := func(err error) (*e2eServer, error) {
		stop()
		return nil, fmt.Errorf("%w\n%s%s", err, out.String(), stderr.String())
	}
	select {
	case line := <-ready:
		pids := []int{cmd.Process.Pid}
		for _, f := range strings.Split(strings.TrimPrefix(line, "ready children="), ",") {
			p, err := strconv.Atoi(f)
			if err != nil {
				return fail(fmt.Errorf("bad ready line %q", line))
			}
			pids = append(pids, p)
		}
		return &e2eServer{pids: pids, stop: stop}, nil
	case err := <-exited:
		done, exitErr = true, err
		// Its last lines may still be in the pipe.
		select {
		case <-eof:
		case <-time.After(time.Second):
		}
		return nil, fmt.Errorf("exited before it was ready: %v\n%s%s", err, out.String(), stderr.String())
	case <-time.After(e2eReadyWait):
		return fail(fmt.Errorf("no ready line within %v", e2eReadyWait))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
}

// userHZ is the unit of the times in /proc/PID/stat: Linux fixes it at
// 100 a second for user space.
const userHZ = 100

// readCPU returns the user and system time the processes pids have used,
// their threads included.
func readCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			return 0, err
		}
		t, err := parseStat(b)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p, err)
		}
		sum += t
	}
	return sum, nil
}

// parseStat returns utime plus stime, fields 14 and 15, of a
// /proc/PID/stat line. The command name, field 2, is in parentheses and
// may hold spaces and parentheses itself: the fields are counted from the
// last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3, the state: utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
