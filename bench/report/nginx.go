package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// nginxStep is the output of `FORMAT=tsv bash bench/peers/nginx.sh`: its
// metadata lines and one row per op, key count and worker count.
type nginxStep struct {
	Command string     `json:"command"`
	Meta    []string   `json:"meta"`
	Rows    []nginxRow `json:"rows"`
}

// nginxRow gives ns per op per process, nginx's and the zone's.
type nginxRow struct {
	Op      string  `json:"op"`
	Keys    int     `json:"keys"`
	Workers int     `json:"workers"`
	Nginx   float64 `json:"nginx_ns"`
	Zone    float64 `json:"zone_ns"`
}

// nginxModule is where Debian's libnginx-mod-http-lua puts the module.
const nginxModule = "/usr/share/nginx/modules/ngx_http_lua_module.so"

func (m *measurer) nginx(ctx context.Context, res *results) error {
	const cmd = "FORMAT=tsv bash bench/peers/nginx.sh"
	if !m.c.nginx {
		m.prog.skip(cmd, "-nginx=false")
		res.Missing = append(res.Missing, "nginx lua_shared_dict: not measured (-nginx=false)")
		return nil
	}
	_, err := m.look("nginx")
	if err == nil {
		_, err = os.Stat(nginxModule)
	}
	if err != nil {
		m.prog.skip(cmd, "nginx or its lua module is not installed")
		res.Missing = append(res.Missing, "nginx lua_shared_dict: nginx-light and libnginx-mod-http-lua are not installed")
		return nil
	}
	m.prog.step(cmd)
	out, err := m.run(ctx, m.c.root, []string{"FORMAT=tsv", "GO=go"}, "bash", "bench/peers/nginx.sh")
	if err != nil {
		return err
	}
	ng, err := parseNginx(out)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	ng.Command = cmd
	res.Nginx = ng
	return nil
}

// parseNginx reads nginx.sh's TSV: "#" lines are metadata, every other line
// op, keys, workers, nginx ns/op, zone ns/op.
func parseNginx(out []byte) (*nginxStep, error) {
	ng := &nginxStep{}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if meta, ok := strings.CutPrefix(line, "#"); ok {
			ng.Meta = append(ng.Meta, strings.TrimSpace(meta))
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("line %q: want 5 tab-separated fields", line)
		}
		var r nginxRow
		var errs [4]error
		r.Op = f[0]
		r.Keys, errs[0] = strconv.Atoi(f[1])
		r.Workers, errs[1] = strconv.Atoi(f[2])
		r.Nginx, errs[2] = strconv.ParseFloat(f[3], 64)
		r.Zone, errs[3] = strconv.ParseFloat(f[4], 64)
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("line %q: %v", line, e)
			}
		}
		if r.Nginx <= 0 || r.Zone <= 0 {
			return nil, fmt.Errorf("line %q: ns/op must be positive", line)
		}
		ng.Rows = append(ng.Rows, r)
	}
	if len(ng.Rows) == 0 {
		return nil, fmt.Errorf("no result rows")
	}
	return ng, nil
}

// row returns the row of an op, key count and worker count, or nil.
func (n *nginxStep) row(op string, keys, workers int) *nginxRow {
	if n == nil {
		return nil
	}
	for i := range n.Rows {
		if r := &n.Rows[i]; r.Op == op && r.Keys == keys && r.Workers == workers {
			return r
		}
	}
	return nil
}
