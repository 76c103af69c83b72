package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// NeedRoot skips a test that needs root when the process is not root. Such
// a test uses namespaces or other users. NeedRoot says why it skips. When
// the environment variable CI is "true", it fails instead. CI runs the
// tests as root, and a skip there would hide them.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root (%s), and CI=true runs as root: not skipped", why)
	}
	t.Skipf("needs root (%s); run as root, as CI does", why)
}

// envMountProc tells a helper to mount a /proc of its own PID namespace.
const envMountProc = "SHMZONE_HELPER_MOUNT_PROC"

// InPIDNamespace makes cmd, a helper from Helper, start as pid 1 of a new
// PID namespace (CLONE_NEWPID). With ownProc it also gets a mount
// namespace of its own. There RunHelper mounts a /proc of its PID
// namespace before the helper runs, as `unshare --pid --fork --mount-proc`
// does. Without ownProc, it sees the host's /proc. There its own pid 1 is
// the host's init. The helper is a direct child of the test, so Pid and
// signals reach it. Needs root.
func InPIDNamespace(cmd *exec.Cmd, ownProc bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	if ownProc {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
		cmd.Env = append(cmd.Env, envMountProc+"=1")
	}
}

// mountOwnProc mounts, in a helper started by InPIDNamespace with ownProc,
// a /proc of its PID namespace, after making its mounts private so that
// nothing leaks to the host's mount namespace.
func mountOwnProc() error {
	if os.Getenv(envMountProc) != "1" {
		return nil
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}
