package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHelperProcess(t *testing.T) {
	RunHelper(map[string]func(args []string) error{
		"echo": func(args []string) error {
			if err := AwaitGate(); err != nil {
				return err
			}
			for _, a := range args {
				fmt.Println(a)
			}
			return nil
		},
		"fail": func(args []string) error { return errors.New(strings.Join(args, " ")) },
		"hang": func(args []string) error {
			fmt.Println("ready")
			for {
				time.Sleep(time.Hour)
			}
		},
	})
}

func TestHelperEcho(t *testing.T) {
	args := []string{"one", "two words", "", "three"}
	var got []string
	g := NewGate(t)
	cmd := Helper(t, "echo", args...)
	g.Attach(cmd)
	p := Start(t, cmd, func(line string) { got = append(got, line) })
	g.Open()
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait() = %v, want nil", err)
	}
	if !reflect.DeepEqual(got, args) {
		t.Errorf("lines = %q, want %q", got, args)
	}
}

func TestHelperFail(t *testing.T) {
	p := Start(t, Helper(t, "fail", "it", "broke"), nil)
	err := p.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(err.Error(), "helper fail: it broke") {
		t.Errorf("Wait() = %v, want exit status 1 with the error", err)
	}
	if err2 := p.Kill(); err2 == nil {
		t.Errorf("Kill() after a failure = nil, want the failure")
	}
	if p := Start(t, Helper(t, "no such helper"), nil); p.Wait() == nil {
		t.Errorf("Wait() for an unknown helper = nil, want exit status 2")
	}
}

func TestHelperKill(t *testing.T) {
	ready := make(chan struct{})
	p := Start(t, Helper(t, "hang"), func(line string) {
		if line == "ready" {
			close(ready)
		}
	})
	select {
	case <-ready:
	case <-p.Done():
		t.Fatalf("helper ended before it was ready: %v", p.Wait())
	case <-time.After(time.Minute):
		t.Fatal("helper not ready after a minute")
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill() = %v, want nil", err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill() = %v, want nil", err)
	}
	if _, _, ok := IsHelper(); ok {
		t.Errorf("IsHelper() in the test process = true")
	}
}

func TestTempZone(t *testing.T) {
	p := TempZone(t)
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(TempZone()) = %v, want ErrNotExist", err)
	}
}
