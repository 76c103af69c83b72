package prefork

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shmzone/shmzone/internal/testutil"
)

// helperExtraFiles runs a master with one child on args[0], its reports on
// stdout. ExtraFiles hands each child a new pipe that holds "slot=S
// roll=R"; the master prints "extra pipe:[INODE]" for each. A child reads
// the pipe at ExtraFD to its end, closes it, prints "child pid=N got
// TEXT", reports ready and waits for the end of its context.
func helperExtraFiles(args []string) error {
	o := Options{
		Addr:         args[0],
		Children:     1,
		ReadyTimeout: hang,
		DrainTimeout: hang,
		ExtraFiles: func(slot, roll int) ([]*os.File, error) {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(w, "slot=%d roll=%d", slot, roll)
			w.Close()
			var st syscall.Stat_t
			if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
				r.Close()
				return nil, err
			}
			fmt.Printf("extra pipe:[%d]\n", st.Ino)
			return []*os.File{r}, nil
		},
	}
	o.Logf = func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	return Run(context.Background(), o, func(ctx context.Context, ln net.Listener) error {
		f := os.NewFile(ExtraFD, "extra")
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Printf("child pid=%d got %s\n", os.Getpid(), b)
		ln.Addr() // ready
		<-ctx.Done()
		return ln.Close()
	})
}

var (
	extraGotRE  = regexp.MustCompile(`child pid=\d+ got (.*)`)
	extraPipeRE = regexp.MustCompile(`extra (pipe:\[\d+\])`)
)

// Every child gets its files of ExtraFiles at ExtraFD: the first, a
// replacement of a killed one and the child of a roll. The master keeps
// none of them open once the children have started.
func TestExtraFiles(t *testing.T) {
	t.Parallel()
	s := &server{addr: freeAddr(t)}
	s.p = testutil.Start(t, testutil.Helper(t, "extra-files", s.addr), func(line string) {
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
	})
	got := func() []string {
		var all []string
		for _, m := range extraGotRE.FindAllStringSubmatch(s.String(), -1) {
			all = append(all, m[1])
		}
		return all
	}
	s.waitFor(t, "first child ready", func() bool { return len(s.pids(readyRE)) == 1 && len(got()) == 1 })
	if err := syscall.Kill(s.pids(readyRE)[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "replacement ready", func() bool { return len(s.pids(readyRE)) == 2 && len(got()) == 2 })
	if err := syscall.Kill(s.p.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "old child retired", func() bool { return len(s.pids(retiredRE)) == 1 && len(got()) == 3 })
	want := []string{"slot=0 roll=0", "slot=0 roll=0", "slot=0 roll=1"}
	if g := got(); strings.Join(g, "|") != strings.Join(want, "|") {
		t.Fatalf("children got %q, want %q; output:\n%s", g, want, s)
	}

	dir := "/proc/" + strconv.Itoa(s.p.Pid()) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil {
			open[link] = true
		}
	}
	for _, m := range extraPipeRE.FindAllStringSubmatch(s.String(), -1) {
		if open[m[1]] {
			t.Errorf("the master still holds the children's %s", m[1])
		}
	}
}
