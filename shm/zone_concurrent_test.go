package shm

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"testing"
)

// Tests of concurrent Opens of one path, from goroutines and from processes:
// exactly one creates the zone.

func TestOpenConcurrentGoroutines(t *testing.T) {
	path := tempZone(t)
	const n = 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		zones [n]*Zone
		errs  [n]error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			zones[i], errs[i] = Open(path, small)
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: Open = %v", i, errs[i])
		}
		defer zones[i].Close()
		if zones[i].Created() {
			created++
		}
		if zones[i].Header() != zones[0].Header() {
			t.Fatalf("goroutine %d: Header() = %+v, want %+v", i, zones[i].Header(), zones[0].Header())
		}
	}
	if created != 1 {
		t.Fatalf("%d Opens report Created, want 1", created)
	}
}

func TestOpenConcurrentProcesses(t *testing.T) {
	path := tempZone(t)
	const n = 4
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   bytes.Buffer
	}
	var children [n]child
	for i := range children {
		c := &children[i]
		c.cmd = helperCommand(t, "open", path)
		c.cmd.Stdout = &c.out
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range children { // start them together
		io.WriteString(children[i].stdin, "go\n")
	}
	created := 0
	var first string
	for i := range children {
		c := &children[i]
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		var cr bool
		var seed uint64
		var size int64
		line := c.out.String()
		if _, err := fmt.Sscanf(line, "created=%t seed=%d size=%d", &cr, &seed, &size); err != nil {
			t.Fatalf("child %d said %q: %v", i, line, err)
		}
		if cr {
			created++
		}
		rest := fmt.Sprintf("seed=%d size=%d", seed, size)
		if first == "" {
			first = rest
		} else if rest != first {
			t.Fatalf("child %d: %s, want %s", i, rest, first)
		}
	}
	if created != 1 {
		t.Fatalf("%d processes report Created, want 1", created)
	}
	z := mustOpen(t, path, Options{})
	if got := fmt.Sprintf("seed=%d size=%d", z.Header().Seed, z.Header().Size); got != first {
		t.Fatalf("parent sees %s, children %s", got, first)
	}
}
