package testutil

import (
	"testing"
	"time"
)

// Exit's channel is closed once the process exits, not before, and at once
// for a process already gone.
func TestExit(t *testing.T) {
	ready := make(chan struct{}, 1)
	p := Start(t, Helper(t, "hang"), func(line string) {
		if line == "ready" {
			ready <- struct{}{}
		}
	})
	select {
	case <-ready:
	case <-p.Done():
		t.Fatalf("helper hang exited: %v", p.Wait())
	}
	exited := Exit(t, p.Pid())
	select {
	case <-exited:
		t.Fatalf("Exit(%d) closed while the process runs", p.Pid())
	default:
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(Hang):
		t.Fatalf("Exit(%d) not closed within %v of the process's death", p.Pid(), Hang)
	}
	select {
	case <-Exit(t, p.Pid()):
	default:
		t.Fatalf("Exit(%d) of a reaped process is not closed", p.Pid())
	}
}
