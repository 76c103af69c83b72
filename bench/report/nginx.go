package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// nginxStep is the output of `FORMAT=tsv bash bench/peers/nginx.sh`: its
// metadata lines and one row per op, key count and worker count. The ops
// are the dict's incr, get and set, and the limiters' req and count (1,000
// keys per process) and reqhot, req's flood of rejections on 4 keys every
// process shares (keys 4).
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

// nginxWhat is what the nginx step measures, for the lines that say it
// was not measured.
const nginxWhat = "nginx lua_shared_dict, resty.limit.req and resty.limit.count"

// nginxSkip says why the nginx step does not run, or "" if it does.
func (m *measurer) nginxSkip() string {
	if !m.c.nginx {
		return "-nginx=false"
	}
	_, err := m.look("nginx")
	if err == nil {
		_, err = os.Stat(nginxModule)
	}
	if err != nil {
		return "nginx or its lua module is not installed (make bench-deps)"
	}
	return ""
}

// limitTrafficRef returns the directory that nginx.sh takes the Lua
// sources from: REF from getenv, else ../shared/reference beside root, as
// nginx.sh looks. It returns an error if lua-resty-limit-traffic's req.lua
// or count.lua is not there, so a run can fail before it measures.
func limitTrafficRef(root string, getenv func(string) string) (string, error) {
	ref := getenv("REF")
	if ref == "" {
		ref = filepath.Join(root, "..", "shared", "reference")
	}
	for _, f := range []string{"req.lua", "count.lua"} {
		p := filepath.Join(ref, "lua-resty-limit-traffic", "lib", "resty", "limit", f)
		if _, err := os.Stat(p); err != nil {
			return ref, fmt.Errorf("bench/peers/nginx.sh needs lua-resty-limit-traffic's Lua sources under REF=%s: %w", ref, err)
		}
	}
	return ref, nil
}

func (m *measurer) nginx(ctx context.Context, res *results) error {
	const cmd = "FORMAT=tsv bash bench/peers/nginx.sh"
	if why := m.nginxSkip(); why != "" {
		m.prog.skip(cmd, why)
		res.Missing = append(res.Missing, nginxWhat+": "+why)
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
