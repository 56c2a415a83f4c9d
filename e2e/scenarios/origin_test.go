//go:build e2e

package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

// TestHostCannotActOnThisComputer: a program on host a, as the host's user but outside the app's
// terminals, reads the token file and runs the installed krad against the forward naming this
// computer's lead (main:1), and with no terminal at all (a Client). Spawn, send, read, close and
// list are all refused with exit 3, and this computer's terminals are as they were: no worker was
// spawned, nothing was typed. The host's own lead is still served.
func TestHostCannotActOnThisComputer(t *testing.T) {
	t.Parallel()
	s := oneHost(t, 44, singleOptions{config: leadOn("main")})
	a, u, c, lead := s.a, s.u, s.c, s.lead
	tokenFile := lead.mustRun(t, `printf '%s\n' "$KRAD_ADE_TOKEN_FILE"`)
	before := localAgents(t, u)

	krad := func(terminal string, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		env := []string{"env", "-i", "HOME=/home/krad", "PATH=/usr/bin:/bin", "KRAD_ADE_ENDPOINT=" + c.forward, "KRAD_ADE_TOKEN_FILE=" + tokenFile}
		if terminal != "" {
			env = append(env, "KRAD_ADE_TERMINAL="+terminal)
		}
		cmd := a.Command(ctx, "krad", append(append(env, kradBin()+"/krad"), args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		return out.String(), cmd.ProcessState.ExitCode()
	}
	for _, c := range []struct {
		terminal string
		args     []string
	}{
		{"main:1", []string{"spawn", "--title", "from a", "--", "touch", "/tmp/host-was-here"}},
		{"main:1", []string{"send", "1", "echo host-was-here"}},
		{"main:1", []string{"read", "1"}},
		{"main:1", []string{"list", "--all"}},
		{"main:1", []string{"close", "1"}},
		{"", []string{"list"}},
		{"", []string{"watch"}},
	} {
		out, rc := krad(c.terminal, c.args...)
		if rc != 3 || !strings.Contains(out, "forward of SSH environment a") {
			t.Errorf("krad %s as %q on host a: exit %d:\n%s\nwant 3 and the forward's refusal", strings.Join(c.args, " "), c.terminal, rc, out)
		}
		t.Logf("krad %s as %q on a: exit %d: %s", c.args[0], c.terminal, rc, strings.TrimSpace(out))
	}
	after := localAgents(t, u)
	if len(after) != len(before) {
		t.Errorf("this computer had %d terminals before the host's attempts and %d after: %+v", len(before), len(after), after)
	}
	if out, rc := krad("a:1", "list"); rc != 0 || !strings.Contains(out, "a:1") {
		t.Errorf("krad list as a:1 on host a: exit %d:\n%s", rc, out)
	}
}

// localAgents are this computer's agents, as a Client on this computer lists them.
func localAgents(t *testing.T, u *user) []api.Agent {
	t.Helper()
	out, errOut, rc := u.krad("list", "--json")
	if rc != 0 {
		t.Fatalf("krad list --json: exit %d: %s", rc, errOut)
	}
	var agents []api.Agent
	if err := json.Unmarshal([]byte(out), &agents); err != nil {
		t.Fatalf("krad list --json: %v: %s", err, out)
	}
	var main []api.Agent
	for _, ag := range agents {
		if ag.Environment == "main" {
			main = append(main, ag)
		}
	}
	if len(main) == 0 {
		t.Fatalf("no terminal on main: %s", out)
	}
	return main
}
