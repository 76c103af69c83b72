package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// redisWait bounds how long a redis-server may take to answer PING, and a
// cluster to reach cluster_state:ok.
const redisWait = 10 * time.Second

// Redis is a redis-server process that a test started on a loopback port,
// with its own temporary directory. It is killed when the test ends.
type Redis struct {
	t       testing.TB
	Addr    string // "127.0.0.1:port"
	Port    int
	dir     string
	args    []string
	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool // SIGSTOPped and not yet continued
}

// RequireRedis fails the test unless redis-server is on PATH. It never
// skips. A test that needs Redis and cannot run is a failure, in CI and
// elsewhere.
func RequireRedis(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("testutil: redis-server is not on PATH in CI: the Makefile's deps step must install it (apt-get install redis-server redis-tools)")
	}
	t.Fatalf("testutil: redis-server is not on PATH: run `make test`, which installs it with apt (redis-server redis-tools)")
}

// StartRedis starts a standalone redis-server without persistence. Its
// loopback port is reserved for the test, as ReservePort does: no other
// socket takes it before the server binds it. A cluster node's bus port is
// reserved the same way. StartRedis returns once the server answers PING.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	return startRedis(t, nil)
}

func startRedis(t testing.TB, extra []string) *Redis {
	t.Helper()
	RequireRedis(t)
	dir := t.TempDir()
	port := reservePort(t)
	r := &Redis{t: t, Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, dir: dir}
	r.args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}, extra...)
	t.Cleanup(r.kill)
	r.start()
	return r
}

// start runs redis-server with r.args and waits until it answers PING.
func (r *Redis) start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", r.args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("testutil: start redis-server: %v", err)
	}
	r.mu.Lock()
	r.cmd, r.stopped = cmd, false
	r.mu.Unlock()
	deadline := time.Now().Add(redisWait)
	for {
		reply, err := RedisDo(r.Addr, "PING")
		if err == nil && reply == "PONG" {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("testutil: redis-server on %s does not answer PING (%v); log:\n%s", r.Addr, err, r.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Log returns the server's log file.
func (r *Redis) Log() string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	return string(b)
}

// Kill sends SIGKILL to the server and reaps it. The port is free again.
func (r *Redis) Kill() { r.kill() }

func (r *Redis) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	r.cmd, r.stopped = nil, false
}

// Stop sends SIGSTOP. The server keeps its connections but answers
// nothing, as a hung server does, until Cont.
func (r *Redis) Stop() { r.signal(syscall.SIGSTOP, true) }

// Cont sends SIGCONT to a stopped server.
func (r *Redis) Cont() { r.signal(syscall.SIGCONT, false) }

func (r *Redis) signal(sig syscall.Signal, stopped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		r.t.Fatalf("testutil: signal %v: redis-server on %s is not running", sig, r.Addr)
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("testutil: signal %v to redis-server: %v", sig, err)
	}
	r.stopped = stopped
}

// Restart kills the server if it runs, and starts it again on the same port
// and directory. A cluster node keeps its nodes.conf, hence its identity
// and slots. Restart returns once the server answers PING. The data is
// gone: nothing is persisted.
func (r *Redis) Restart() {
	r.t.Helper()
	r.kill()
	r.start()
}

// RedisCluster is a Redis Cluster of masters without replicas, every node a
// Redis started by the test.
type RedisCluster struct {
	Nodes []*Redis
}

// Addrs returns the nodes' addresses, to seed a cluster client.
func (c *RedisCluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return a
}

// StartRedisCluster starts n cluster-enabled servers. It joins them with
// `redis-cli --cluster create`, slots spread evenly, no replicas. It
// returns once every node reports cluster_state:ok.
func StartRedisCluster(t testing.TB, n int) *RedisCluster {
	t.Helper()
	RequireRedis(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("testutil: redis-cli is not on PATH: run `make test`, which installs redis-tools")
	}
	c := &RedisCluster{}
	create := []string{"--cluster", "create"}
	for i := 0; i < n; i++ {
		conf := filepath.Join(t.TempDir(), "nodes.conf")
		node := startRedis(t, []string{
			"--cluster-enabled", "yes", "--cluster-config-file", conf,
			"--cluster-port", strconv.Itoa(reservePort(t)), "--cluster-node-timeout", "5000",
		})
		c.Nodes = append(c.Nodes, node)
		create = append(create, node.Addr)
	}
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("testutil: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(redisWait)
	for _, node := range c.Nodes {
		for {
			info, err := RedisDo(node.Addr, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testutil: cluster node %s not ok: %v\n%s", node.Addr, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// RedisDo sends one command to the server at addr on a new connection. It
// returns the reply: a status or bulk string, or an integer in decimal. An
// error reply is returned as an error. It needs no client library. So only
// package redistier imports go-redis.
func RedisDo(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("testutil: empty reply from %s", addr)
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("testutil: redis %s: %s", addr, line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("testutil: unsupported reply %q from %s", line, addr)
}
