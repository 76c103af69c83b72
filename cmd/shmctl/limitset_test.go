package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shmzone/shmzone/limiter"
)

// TestLimitsSetShowUnset sets live numbers from the shell, shows them with
// the built ones they hide, and drops them.
func TestLimitsSetShowUnset(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	d := h.dict("lim")
	defer d.Close()
	api, err := limiter.NewReq(d, "api", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.NewCount(d, "login", 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	h.ok("limits", "set", "lim", "api", "--rate", "20r/s", "--burst", "40")
	if got, want := api.Policy(), (limiter.Policy{Limit: 41, Window: 3 * time.Second}); got != want {
		t.Errorf("Policy() of a Req after limits set = %+v, want %+v", got, want)
	}
	out := h.ok("limits", "show", "lim")
	for _, want := range []string{"rate 20r/s, burst 40", "live", "rate 1r/s, burst 2", "limit 3 per 1m0s", "built"} {
		if !strings.Contains(out, want) {
			t.Errorf("limits show lacks %q:\n%s", want, out)
		}
	}
	var rows []settingRow
	if err := json.Unmarshal([]byte(h.ok("limits", "show", "--json", "--name", "api", "lim")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].From != "live" || rows[0].Built == nil || *rows[0].Built != "rate 1r/s, burst 2" || rows[0].InForce != "rate 20r/s, burst 40" {
		t.Errorf("limits show --json --name api = %+v, want live rate 20r/s, burst 40 over built rate 1r/s, burst 2", rows)
	}

	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"limits", "set", "lim", "api", "--limit", "5"}, exitUsage},       // not a Req's
		{[]string{"limits", "set", "lim", "api", "--rate", "fast"}, exitUsage},     // no rate
		{[]string{"limits", "set", "lim", "login", "--limit", "0"}, exitUsage},     // refused by Count
		{[]string{"limits", "set", "lim", "nothing", "--rate", "1r/s"}, exitUsage}, // no such limiter
		{[]string{"limits", "set", "lim", "api"}, exitUsage},                       // nothing to set
		{[]string{"limits", "show", "lim", "--rate", "1r/s"}, exitUsage},           // a flag of set
		{[]string{"limits", "unset", "lim", "login"}, exitNo},                      // nothing live
		{[]string{"limits", "set", "none", "api", "--rate", "1r/s"}, exitNoZone},   // no zone
	} {
		if _, stderr, code := h.run(tt.args...); code != tt.code {
			t.Errorf("shmctl %s: exit %d, stderr %q; want %d", strings.Join(tt.args, " "), code, stderr, tt.code)
		}
	}

	h.ok("limits", "set", "lim", "login", "--limit", "1000")
	h.ok("limits", "unset", "lim", "api")
	if got, want := api.Policy(), (limiter.Policy{Limit: 3, Window: 3 * time.Second}); got != want {
		t.Errorf("Policy() of a Req after limits unset = %+v, want the built %+v", got, want)
	}
	if err := json.Unmarshal([]byte(h.ok("limits", "show", "--json", "lim")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "login" || rows[0].From != "live" || rows[0].InForce != "limit 1000 per 1m0s" ||
		rows[1].Name != "api" || rows[1].From != "built" || rows[1].Built != nil {
		t.Errorf("limits show --json after unset = %+v, want count login live at 1000, req api built", rows)
	}
}

// TestLimitsDryRun switches a dry run on and off from the shell, shows it
// and its count in limits and limits show, and refuses a bad switch.
func TestLimitsDryRun(t *testing.T) {
	h := newHarness(t)
	h.ok("create", "lim", "--size", "256K", "--shards", "1")
	d := h.dict("lim")
	defer d.Close()
	login, err := limiter.NewCount(d, "login", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := login.Incoming(context.Background(), "alice", true); err != nil {
			t.Fatal(err)
		}
	}
	h.ok("limits", "set", "lim", "login", "--dry-run", "on")
	if !login.DryRun() {
		t.Error("DryRun() = false after limits set --dry-run on")
	}
	if err := login.AddDryRunRejected(4); err != nil {
		t.Fatal(err)
	}
	var rows []settingRow
	if err := json.Unmarshal([]byte(h.ok("limits", "show", "--json", "lim")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !rows[0].DryRun || rows[0].DryRunRejected != 4 || rows[0].From != "built" || rows[0].InForce != "limit 1 per 1m0s" {
		t.Errorf("limits show --json = %+v, want a dry run on, 4 rejected, numbers built", rows)
	}
	out := h.ok("limits", "show", "lim")
	if !strings.Contains(out, "DRY-RUN REJECTED") || !strings.Contains(out, "on       4") {
		t.Errorf("limits show lacks the dry run on and its 4:\n%s", out)
	}
	out = h.ok("limits", "lim")
	if !strings.Contains(out, "(dry run on, 4 rejected)") {
		t.Errorf("limits lacks the dry run line:\n%s", out)
	}
	var ls []limitRow
	if err := json.Unmarshal([]byte(h.ok("limits", "--json", "lim")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || !ls[0].DryRun || ls[0].DryRunRejected != 4 {
		t.Errorf("limits --json = %+v, want a dry run on, 4 rejected", ls)
	}

	h.ok("limits", "set", "lim", "login", "--dry-run", "off")
	if login.DryRun() {
		t.Error("DryRun() = true after limits set --dry-run off")
	}
	h.ok("limits", "set", "lim", "login", "--dry-run", "on")
	h.ok("limits", "unset", "lim", "login")
	if login.DryRun() {
		t.Error("DryRun() = true after limits unset")
	}
	if out := h.ok("limits", "lim"); !strings.Contains(out, "(dry run off, 4 rejected)") {
		t.Errorf("limits after unset lacks the count:\n%s", out)
	}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"limits", "set", "lim", "login", "--dry-run", "yes"}, exitUsage},
		{[]string{"limits", "set", "lim", "login", "--dry-run", "ON"}, exitUsage},
		{[]string{"limits", "show", "lim", "--dry-run", "on"}, exitUsage},
	} {
		if _, stderr, code := h.run(tt.args...); code != tt.code {
			t.Errorf("shmctl %s: exit %d, stderr %q; want %d", strings.Join(tt.args, " "), code, stderr, tt.code)
		}
	}
	if _, stderr, _ := h.run("limits", "set", "lim", "login", "--dry-run", "yes"); !strings.Contains(stderr, `bad --dry-run "yes": want on or off`) {
		t.Errorf("stderr %q lacks the reason", stderr)
	}
}
