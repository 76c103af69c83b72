package main

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine is what the page says of the machine the figures came from.
type machine struct {
	CPUs    int    `json:"cpus"`
	Model   string `json:"model"`   // /proc/cpuinfo's model name
	Virtual bool   `json:"virtual"` // the CPU flags include hypervisor
	MemGiB  int    `json:"mem_gib"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Redis   string `json:"redis,omitempty"`
}

func (m *measurer) machine(ctx context.Context) machine {
	mc := machine{CPUs: runtime.NumCPU()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if mc.Model == "" {
					mc.Model = strings.TrimSpace(v)
				}
			case "flags":
				mc.Virtual = mc.Virtual || strings.Contains(" "+v+" ", " hypervisor ")
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mc.MemGiB = int(kb/(1<<20) + 0.5)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		mc.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := m.run(ctx, m.c.root, nil, "go", "env", "GOVERSION", "GOOS", "GOARCH"); err == nil {
		f := strings.Fields(string(out))
		if len(f) == 3 {
			mc.Go = f[0] + " " + f[1] + "/" + f[2]
		}
	}
	return mc
}
