package main

// serve_secret.go: the Redis password of "worker serve". The master reads
// it from -redis-password-file, from the variable that -redis-password-env
// names, or, with -redis-password-in-url, from the -redis URL. It hands it
// to each child on a pipe at prefork.ExtraFD. Neither a command line nor an
// environment of the master's children holds it: every user of the host
// can read a command line, and a child's environment passes to what it
// starts.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/shmzone/shmzone/prefork"
)

// serveSecretMax is the longest password, in bytes. It is PIPE_BUF: the
// master's write of it into a child's empty pipe never blocks.
const serveSecretMax = 4096

// serveSecret is a password. Every fmt verb prints it as "xxxxx", so no
// log, error or panic that formats a serveConfig shows it.
type serveSecret string

// Format prints "xxxxx", or nothing for an empty secret.
func (s serveSecret) Format(f fmt.State, _ rune) {
	if s != "" {
		io.WriteString(f, "xxxxx")
	}
}

// serveAuthFlags validates the flags of Redis's credentials and takes a
// password out of the -redis URL into c.Password, if inURL allows it.
// c.Redis is then the URL without its password.
func serveAuthFlags(c *serveConfig, inURL bool) error {
	if c.Redis == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"-redis-username", c.RedisUsername != ""},
			{"-redis-password-file", c.PasswordFile != ""},
			{"-redis-password-env", c.PasswordEnv != ""},
			{"-redis-password-in-url", inURL},
		} {
			if f.set {
				return fmt.Errorf("%s needs -redis", f.name)
			}
		}
		return nil
	}
	if c.PasswordFile != "" && c.PasswordEnv != "" {
		return errors.New("-redis-password-file and -redis-password-env: give one")
	}
	if !strings.Contains(c.Redis, "://") {
		return nil
	}
	u, err := url.Parse(c.Redis)
	if err != nil {
		return nil // serveRedisOptions says why, without the URL
	}
	if u.User == nil {
		return nil
	}
	user := u.User.Username()
	if user != "" && c.RedisUsername != "" {
		return errors.New("-redis-username and a user in the -redis URL: give one")
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return nil
	}
	if !inURL {
		return errors.New("-redis: the URL holds a password, and every user of this host can read a command line; " +
			"give the password in -redis-password-file or -redis-password-env, or add -redis-password-in-url to accept that")
	}
	if c.PasswordFile != "" || c.PasswordEnv != "" {
		return errors.New("a password in the -redis URL and in -redis-password-file or -redis-password-env: give one")
	}
	if len(pw) > serveSecretMax {
		return fmt.Errorf("-redis: the URL's password is over %d bytes", serveSecretMax)
	}
	c.Password = serveSecret(pw)
	u.User = nil
	if user != "" {
		u.User = url.User(user)
	}
	c.Redis = u.String()
	return nil
}

// serveLoadPassword reads, in the master, the password of
// -redis-password-file or -redis-password-env into c.Password. It removes
// -redis-password-env's variable from the environment, so that no child
// inherits it. The error warn says that the variable stays in
// /proc/self/environ; the master may go on.
func serveLoadPassword(c *serveConfig) (warn, err error) {
	switch {
	case c.PasswordFile != "":
		b, err := os.ReadFile(c.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("-redis-password-file: %w", err)
		}
		if !bytes.HasSuffix(b, []byte("\r\n")) {
			b = bytes.TrimSuffix(b, []byte("\n"))
		} else {
			b = b[:len(b)-2]
		}
		if err := serveCheckPassword(b); err != nil {
			return nil, fmt.Errorf("-redis-password-file %s: %w", c.PasswordFile, err)
		}
		c.Password = serveSecret(b)
	case c.PasswordEnv != "":
		v, ok := os.LookupEnv(c.PasswordEnv)
		if !ok {
			return nil, fmt.Errorf("-redis-password-env: %s is not set", c.PasswordEnv)
		}
		if err := serveEraseEnv(c.PasswordEnv); err != nil {
			warn = fmt.Errorf("-redis-password-env: %s stays in /proc/%d/environ, which this user and root can read: %w", c.PasswordEnv, os.Getpid(), err)
		}
		if err := serveCheckPassword([]byte(v)); err != nil {
			return warn, fmt.Errorf("-redis-password-env %s: %w", c.PasswordEnv, err)
		}
		c.Password = serveSecret(v)
	}
	return warn, nil
}

func serveCheckPassword(b []byte) error {
	if len(b) == 0 {
		return errors.New("the password is empty")
	}
	if len(b) > serveSecretMax {
		return fmt.Errorf("the password is over %d bytes", serveSecretMax)
	}
	return nil
}

// serveEraseEnv removes the variable name from the environment. os.Unsetenv
// drops it from the Go runtime's copy. The kernel shows the block the
// process started with in /proc/self/environ, so serveEraseEnv also
// overwrites the variable's value there with zero bytes, through
// /proc/self/mem.
func serveEraseEnv(name string) error {
	os.Unsetenv(name)
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// pid (comm) state ...: comm may hold spaces and parentheses. The
	// fields after it start at field 3; env_start and env_end are fields
	// 50 and 51 (proc(5)).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return errors.New("bad /proc/self/stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 49 {
		return errors.New("/proc/self/stat has no env_start")
	}
	start, err1 := strconv.ParseInt(f[47], 10, 64)
	end, err2 := strconv.ParseInt(f[48], 10, 64)
	if err1 != nil || err2 != nil || start <= 0 || end < start {
		return errors.New("bad env_start or env_end in /proc/self/stat")
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return err
	}
	prefix := []byte(name + "=")
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		if entry := block[off : off+n]; bytes.HasPrefix(entry, prefix) {
			at := off + len(prefix)
			if _, err := mem.WriteAt(make([]byte, off+n-at), start+int64(at)); err != nil {
				return err
			}
		}
		off += n + 1
	}
	return nil
}

// serveSecretPipe returns, for one child, a pipe that holds secret and is
// closed at its write end. The master passes it at prefork.ExtraFD.
func serveSecretPipe(secret serveSecret) ([]*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(w, string(secret))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("the Redis password's pipe: %w", err)
	}
	return []*os.File{r}, nil
}

// serveReadSecret reads, in a child, the password from the pipe at
// prefork.ExtraFD, and closes it. The descriptor is marked close-on-exec
// first, so no program the child starts inherits it.
func serveReadSecret() (serveSecret, error) {
	syscall.CloseOnExec(prefork.ExtraFD)
	f := os.NewFile(prefork.ExtraFD, "redis-password")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, serveSecretMax+1))
	if err != nil {
		return "", fmt.Errorf("the Redis password at fd %d: %w", prefork.ExtraFD, err)
	}
	if err := serveCheckPassword(b); err != nil {
		return "", fmt.Errorf("the Redis password at fd %d: %w", prefork.ExtraFD, err)
	}
	return serveSecret(b), nil
}
