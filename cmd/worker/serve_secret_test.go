package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shmzone/shmzone/internal/testutil"
)

// The passwords of serveAuthRedis: the default user's and the ACL user's.
const (
	serveTestPassword     = "s3cret-default-7Qx"
	serveTestUser         = "worker"
	serveTestUserPassword = "s3cret-acl-9Kz"
	serveTestPrefix       = "worker-secret" // the ACL user's keys start with it
)

// serveAuthRedis starts a redis-server whose default user needs
// serveTestPassword, with an ACL user serveTestUser, whose password is
// serveTestUserPassword and who may touch only keys under serveTestPrefix.
// It returns a client of the default user.
func serveAuthRedis(t *testing.T) (*testutil.Redis, *redis.Client) {
	t.Helper()
	r := testutil.StartRedis(t)
	for _, cmd := range [][]string{
		{"ACL", "SETUSER", serveTestUser, "on", ">" + serveTestUserPassword, "~" + serveTestPrefix + "*", "+@all"},
		{"CONFIG", "SET", "requirepass", serveTestPassword},
	} {
		if _, err := testutil.RedisDo(r.Addr, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := testutil.RedisDo(r.Addr, "PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without a password = %v, want NOAUTH", err)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr, Password: serveTestPassword})
	t.Cleanup(func() { rc.Close() })
	return r, rc
}

// serveRedisCount is the count of every host in Redis, summed over the
// windows of the global limit under prefix.
func serveRedisCount(t *testing.T, rc *redis.Client, prefix string) int {
	t.Helper()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, prefix+":"+serveGlobalKey+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		all, err := rc.HGetAll(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range all {
			if strings.HasSuffix(f, ":s") {
				continue
			}
			c, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s %s = %q", k, f, v)
			}
			n += c
		}
	}
	return n
}

// serveSendOK sends n requests to s, each on a new connection, and fails
// the test unless each is answered 200.
func serveSendOK(t *testing.T, s *serveTestServer, n int) {
	t.Helper()
	client := &http.Client{Timeout: serveHang, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range n {
		resp, err := client.Get("http://" + s.addr + "/")
		if err != nil {
			t.Fatalf("request %d: %v; stderr:\n%s", i, err, s.stderr)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d = %d, want 200; stderr:\n%s", i, resp.StatusCode, s.stderr)
		}
	}
}

// serveAwaitRedisCount waits until Redis holds a count of at least n under
// prefix: the children's flushes reached Redis, logged in. If it does not,
// the message gives a child's global metrics. Its fallbacks are the
// requests that -redis-policy decided, which no flush carries.
func serveAwaitRedisCount(t *testing.T, s *serveTestServer, rc *redis.Client, prefix string, n int) {
	t.Helper()
	var got int
	if !serveWaitFor(serveHang, func() bool { got = serveRedisCount(t, rc, prefix); return got >= n }) {
		var global []string
		for _, line := range strings.Split(serveMetricsText(t, s.addr), "\n") {
			if strings.HasPrefix(line, "worker_serve_global_") || strings.HasPrefix(line, "worker_serve_redis_") || strings.HasPrefix(line, "worker_serve_pid ") {
				global = append(global, line)
			}
		}
		t.Fatalf("Redis holds a count of %d under %s, want at least %d; a child's metrics:\n%s\nstderr:\n%s", got, prefix, n, strings.Join(global, "\n"), s.stderr)
	}
}

// serveCheckNoSecret fails the test if secret is in the command line or
// the environment of pid. It fails it too if a child holds a pipe past its
// stderr that the test does not hold: the pipe of its password, left open.
// With cmdline false, the command line is not checked.
func serveCheckNoSecret(t *testing.T, who string, pid int, secret string, cmdline bool) {
	t.Helper()
	files := []string{"environ"}
	if cmdline {
		files = append(files, "cmdline")
	}
	for _, f := range files {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
		if err != nil {
			t.Fatalf("%s %d: %v", who, pid, err)
		}
		if len(b) == 0 {
			t.Fatalf("%s %d: /proc/%d/%s is empty", who, pid, pid, f)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s %d: /proc/%d/%s holds the password", who, pid, pid, f)
		}
	}
	if who == "master" {
		return
	}
	inherited := map[string]bool{} // from whoever started the test
	for fd, link := range serveFDs(t, "self") {
		if fd > 2 {
			inherited[link] = true
		}
	}
	for fd, link := range serveFDs(t, strconv.Itoa(pid)) {
		if fd > 2 && strings.HasPrefix(link, "pipe:") && !inherited[link] {
			t.Errorf("%s %d: fd %d is a %s", who, pid, fd, link)
		}
	}
}

// serveFDs maps the open descriptors of a process ("self" or a pid) to
// what they link to.
func serveFDs(t *testing.T, pid string) map[int]string {
	t.Helper()
	dir := "/proc/" + pid + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	links := map[int]string{}
	for _, fd := range fds {
		n, err := strconv.Atoi(fd.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(dir + "/" + fd.Name()); err == nil {
			links[n] = link
		}
	}
	return links
}

// The master gets Redis's password from a file, an environment variable
// or, opted in, the -redis URL. Its children log in to Redis: their
// flushes reach it. Yet no command line and no environment of the master
// or a child holds the password, but the master's command line when the
// URL carries it. Nor do the logs and /metrics.
func TestServeRedisPasswordHidden(t *testing.T) {
	t.Parallel()
	r, rc := serveAuthRedis(t)
	dir := t.TempDir()
	file := func(name, pw string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const envName = "WORKER_TEST_REDIS_PASSWORD"
	for _, tc := range []struct {
		name    string
		secret  string
		env     []string
		args    []string
		cmdline bool // the master's command line is free of it
	}{
		{"file", serveTestPassword, nil,
			[]string{"-redis", r.Addr, "-redis-password-file", file("default", serveTestPassword)}, true},
		{"file acl user", serveTestUserPassword, nil,
			[]string{"-redis", r.Addr, "-redis-username", serveTestUser, "-redis-password-file", file("acl", serveTestUserPassword)}, true},
		{"env", serveTestPassword, []string{envName + "=" + serveTestPassword},
			[]string{"-redis", r.Addr, "-redis-password-env", envName}, true},
		{"url opt-in", serveTestUserPassword, nil,
			[]string{"-redis", "redis://" + serveTestUser + ":" + serveTestUserPassword + "@" + r.Addr + "/0", "-redis-password-in-url"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := serveTestPrefix + "-" + strings.ReplaceAll(tc.name, " ", "-")
			args := append([]string{"-rate", "1000r/s", "-burst", "100", "-nodelay",
				"-global-rate", "100000r/m", "-global-interval", "50ms", "-redis-prefix", prefix}, tc.args...)
			s := launchServeEnv(t, 2, tc.env, args...)
			s.waitReady(t)
			const n = 10
			serveSendOK(t, s, n)
			serveAwaitRedisCount(t, s, rc, prefix, n)

			serveCheckNoSecret(t, "master", s.cmd.Process.Pid, tc.secret, tc.cmdline)
			children := s.stderr.serveReadyPids()
			if len(children) != 2 {
				t.Fatalf("%d children ready, want 2; stderr:\n%s", len(children), s.stderr)
			}
			for _, pid := range children {
				serveCheckNoSecret(t, "child", pid, tc.secret, true)
			}
			if m := serveMetricsText(t, s.addr); strings.Contains(m, tc.secret) {
				t.Errorf("/metrics holds the password:\n%s", m)
			}
			if strings.Contains(s.stderr.String(), tc.secret) {
				t.Errorf("the master's stderr holds the password:\n%s", s.stderr)
			}
		})
	}
}

// A child that replaces a killed one gets the password too: with one
// child, only the replacement can flush the requests sent after the kill.
func TestServeRedisPasswordRespawn(t *testing.T) {
	t.Parallel()
	r, rc := serveAuthRedis(t)
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte(serveTestPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := serveTestPrefix + "-respawn"
	s := startServe(t, 1, "-rate", "1000r/s", "-burst", "100", "-nodelay",
		"-redis", r.Addr, "-redis-password-file", pw, "-redis-prefix", prefix,
		"-global-rate", "100000r/m", "-global-interval", "50ms")
	const n = 5
	serveSendOK(t, s, n)
	serveAwaitRedisCount(t, s, rc, prefix, n)
	first := s.stderr.serveReadyPids()[0]
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !serveWaitFor(serveHang, func() bool { return len(s.stderr.serveReadyPids()) == 2 }) {
		t.Fatalf("no replacement for child %d; stderr:\n%s", first, s.stderr)
	}
	serveSendOK(t, s, n)
	serveAwaitRedisCount(t, s, rc, prefix, 2*n)
	serveCheckNoSecret(t, "child", s.stderr.serveReadyPids()[1], serveTestPassword, true)
}

// A -redis URL with a password is refused without -redis-password-in-url:
// the process exits 2 and says why, without printing the password.
func TestServeRefusesURLPassword(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "serve", "-procs", "1", "-addr", "127.0.0.1:1",
		"-zone", filepath.Join(t.TempDir(), "z.zone"),
		"-redis", "redis://:"+serveTestPassword+"@127.0.0.1:1/0", "-global-rate", "10r/s")
	cmd.Env = append(os.Environ(), serveTestEnv+"=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("worker serve = %v, want exit 2; stderr: %q", err, errb.String())
	}
	for _, want := range []string{"-redis: the URL holds a password", "command line", "-redis-password-file", "-redis-password-in-url"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
	if strings.Contains(errb.String(), serveTestPassword) {
		t.Errorf("stderr prints the password: %q", errb.String())
	}
}

// The flags of Redis's credentials: what each refuses, with exit 2 and a
// message that does not print the password.
func TestServeAuthFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty", []byte("\n"))
	big := write("big", bytes.Repeat([]byte("x"), serveSecretMax+1))
	pw := write("pw", []byte(serveTestPassword+"\n"))
	const addr = "127.0.0.1:1"
	url := "redis://:" + serveTestPassword + "@" + addr
	for _, tc := range []struct {
		name string
		args []string
		want string // in the message
	}{
		{"url password", []string{"-redis", url}, "-redis: the URL holds a password, and every user of this host can read a command line"},
		{"user and url password", []string{"-redis", "redis://u:" + serveTestPassword + "@" + addr}, "add -redis-password-in-url"},
		{"file and env", []string{"-redis", addr, "-redis-password-file", pw, "-redis-password-env", "X"}, "-redis-password-file and -redis-password-env: give one"},
		{"url and file", []string{"-redis", url, "-redis-password-in-url", "-redis-password-file", pw}, "a password in the -redis URL and in -redis-password-file"},
		{"two users", []string{"-redis", "redis://u@" + addr, "-redis-username", "v"}, "-redis-username and a user in the -redis URL"},
		{"username without redis", []string{"-redis-username", "u"}, "-redis-username needs -redis"},
		{"file without redis", []string{"-redis-password-file", pw}, "-redis-password-file needs -redis"},
		{"env without redis", []string{"-redis-password-env", "X"}, "-redis-password-env needs -redis"},
		{"opt-in without redis", []string{"-redis-password-in-url"}, "-redis-password-in-url needs -redis"},
		{"no file", []string{"-redis", addr, "-redis-password-file", filepath.Join(dir, "none")}, "no such file"},
		{"empty file", []string{"-redis", addr, "-redis-password-file", empty}, "the password is empty"},
		{"big file", []string{"-redis", addr, "-redis-password-file", big}, "over 4096 bytes"},
		{"env unset", []string{"-redis", addr, "-redis-password-env", "WORKER_TEST_UNSET_PASSWORD"}, "WORKER_TEST_UNSET_PASSWORD is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-zone", filepath.Join(t.TempDir(), "z.zone"), "-global-rate", "10r/s"}, tc.args...)
			var errb bytes.Buffer
			if code := runServe(args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("runServe(%q) = %d, %q; want 2 and a message with %q", tc.args, code, errb.String(), tc.want)
			}
			if strings.Contains(errb.String(), serveTestPassword) {
				t.Errorf("runServe(%q) printed the password: %q", tc.args, errb.String())
			}
		})
	}

	// Opted in, the password leaves the URL for Password, and the user stays.
	_, _, c, err := serveFlags([]string{"-redis", "redis://u:" + serveTestPassword + "@" + addr + "/2", "-redis-password-in-url", "-global-rate", "10r/s"}, io.Discard)
	if err != nil || c.Redis != "redis://u@"+addr+"/2" || c.Password != serveTestPassword {
		t.Fatalf("opt-in: Redis %q, Password %q, %v; want redis://u@%s/2 and the password", c.Redis, string(c.Password), err, addr)
	}
}

// A password prints as xxxxx under every verb, and the children's JSON
// lacks it.
func TestServeSecretNotPrinted(t *testing.T) {
	c := serveConfig{Redis: "127.0.0.1:6379", RedisPasswordFD: true, Password: serveTestPassword}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for _, v := range []any{c, &c, c.Password} {
			if got := fmt.Sprintf(verb, v); strings.Contains(got, serveTestPassword) || !strings.Contains(got, "xxxxx") {
				t.Errorf("Sprintf(%s, %T) = %q, want xxxxx for the password", verb, v, got)
			}
		}
	}
	if got := fmt.Sprint(serveSecret("")); got != "" {
		t.Errorf("an empty secret prints %q", got)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), serveTestPassword) || !strings.Contains(string(b), `"redis_password_fd":true`) {
		t.Errorf("the children's configuration %s holds the password, or lacks redis_password_fd", b)
	}
}
