package testutil

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Exit returns a channel that is closed when the process pid exits. The
// process's parent may be any process. Exit watches the process through a
// pidfd opened now. Call it while pid runs. A pid reused later is then not
// taken for it. A process already gone gives a closed channel. Exit fails
// the test when the pidfd cannot be opened. The watch ends with the test.
func Exit(t testing.TB, pid int) <-chan struct{} {
	t.Helper()
	exited := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		close(exited)
		return exited
	}
	if err != nil {
		t.Fatalf("testutil: pidfd of %d: %v", pid, err)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer unix.Close(fd)
		// A pidfd turns readable when its process exits. Poll in short
		// rounds, to see stop between them.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := unix.Poll(fds, 100)
			if err != nil && !errors.Is(err, unix.EINTR) {
				t.Errorf("testutil: poll the pidfd of %d: %v", pid, err)
				return
			}
			if n > 0 {
				close(exited)
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-stopped
	})
	return exited
}
