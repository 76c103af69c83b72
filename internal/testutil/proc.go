package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
)

// Proc is a started helper process whose stdout is read line by line.
type Proc struct {
	cmd    *exec.Cmd
	stderr syncBuffer
	eof    chan struct{} // closed when stdout reached EOF and onLine returned
	once   sync.Once
	err    error // Wait's result, set once
}

// Start starts cmd, usually from Helper. It calls onLine with each line cmd
// writes to stdout, without the newline. The calls come from one
// goroutine, in order. A nil onLine discards stdout. Unless the caller set
// cmd.Stderr, stderr is kept for the error Wait returns. The process is
// killed when the test ends, if it still runs then. Start fails the test
// when the command cannot start.
func Start(t testing.TB, cmd *exec.Cmd, onLine func(line string)) *Proc {
	t.Helper()
	p := &Proc{cmd: cmd, eof: make(chan struct{})}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.stderr
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("testutil: pipe: %v", err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("testutil: start %v: %v", cmd.Args, err)
	}
	w.Close() // the child holds the only write end: EOF when it exits
	go func() {
		defer close(p.eof)
		defer r.Close()
		if onLine == nil {
			io.Copy(io.Discard, r)
			return
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			onLine(sc.Text())
		}
		io.Copy(io.Discard, r) // after a line too long: keep the child from blocking
	}()
	t.Cleanup(func() { p.Kill() })
	return p
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done returns a channel that is closed once the process has closed its
// stdout. It normally does so by exiting. By then onLine has seen every
// line.
func (p *Proc) Done() <-chan struct{} { return p.eof }

// Wait waits for the process to exit and for onLine to see its last line.
// It returns nil when the process exited with status 0. Otherwise the
// error carries the process's stderr. It is an *exec.ExitError, matched
// with errors.As. Wait reaps the process, so its pid no longer counts as
// alive. It may be called any number of times.
func (p *Proc) Wait() error {
	p.once.Do(func() {
		err := p.cmd.Wait()
		<-p.eof
		if err != nil {
			if s := p.stderr.String(); s != "" {
				err = fmt.Errorf("%w; stderr:\n%s", err, s)
			}
		}
		p.err = err
	})
	return p.err
}

// Kill sends SIGKILL and waits as Wait does. It returns nil when the
// process died of the signal. It returns nil too when the process had
// already exited with status 0. It returns Wait's error when the process
// had failed on its own before the signal came.
func (p *Proc) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testutil: kill %d: %w", p.Pid(), err)
	}
	err := p.Wait()
	if st := p.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil
		}
	}
	return err
}

// syncBuffer is a bytes.Buffer that exec's copying goroutine may write while
// Wait's caller reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Gate holds helper processes at a common start line. Each helper started
// with the gate attached calls AwaitGate. AwaitGate returns when the test
// calls Open. The helpers' start-up costs then pass before their work
// overlaps.
type Gate struct {
	r, w *os.File
	once sync.Once
}

// NewGate returns a closed gate. It is opened at the latest when the test
// ends.
func NewGate(t testing.TB) *Gate {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("testutil: pipe: %v", err)
	}
	g := &Gate{r: r, w: w}
	t.Cleanup(g.Open)
	return g
}

// Attach makes the gate cmd's stdin. Call it before Start.
func (g *Gate) Attach(cmd *exec.Cmd) { cmd.Stdin = g.r }

// Open lets every helper through: AwaitGate returns in each. Call it after
// every helper that is to wait at the gate has been started.
func (g *Gate) Open() {
	g.once.Do(func() {
		g.r.Close()
		g.w.Close()
	})
}

// AwaitGate is called by a helper. It returns when the test opens the gate
// attached to the helper's stdin.
func AwaitGate() error {
	_, err := io.Copy(io.Discard, os.Stdin)
	return err
}
