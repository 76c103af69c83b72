package testutil

import (
	"strings"
	"testing"
	"time"
)

func TestRedisKillStopRestart(t *testing.T) {
	r := StartRedis(t)
	if _, err := RedisDo(r.Addr, "SET", "k", "v"); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := RedisDo(r.Addr, "GET", "k"); err != nil || got != "v" {
		t.Fatalf("GET k = %q, %v; want v", got, err)
	}

	r.Stop()
	start := time.Now()
	if _, err := RedisDo(r.Addr, "PING"); err == nil {
		t.Fatalf("PING to a stopped server answered")
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("PING to a stopped server failed after %v, want a timeout", d)
	}
	r.Cont()
	if got, err := RedisDo(r.Addr, "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING after SIGCONT = %q, %v", got, err)
	}

	r.Kill()
	if _, err := RedisDo(r.Addr, "PING"); err == nil {
		t.Fatalf("PING to a killed server answered")
	}
	r.Restart()
	if got, err := RedisDo(r.Addr, "EXISTS", "k"); err != nil || got != "0" {
		t.Fatalf("EXISTS k after restart = %q, %v; want 0 (nothing persisted)", got, err)
	}
}

func TestRedisCluster(t *testing.T) {
	c := StartRedisCluster(t, 3)
	for _, n := range c.Nodes {
		nodes, err := RedisDo(n.Addr, "CLUSTER", "NODES")
		if err != nil {
			t.Fatalf("CLUSTER NODES on %s: %v", n.Addr, err)
		}
		if got := strings.Count(nodes, "master"); got != 3 {
			t.Fatalf("%s sees %d masters, want 3:\n%s", n.Addr, got, nodes)
		}
	}
	if got := len(c.Addrs()); got != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", got)
	}
}
