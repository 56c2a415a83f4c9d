package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/extension"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/remote/shell"
)

// hostVars are the KRAD_ADE_* variables and the PATH that the app gives the host's terminals,
// as a worker there sees them.
func (w *world) hostVars() map[string]string {
	w.t.Helper()
	out := filepath.Join(w.t.TempDir(), "env")
	var worker api.Agent
	w.call(w.as(1), api.Spawn, &api.SpawnBody{Title: "env", Command: []string{"sh", "-c", "env > " + out + ".tmp && mv " + out + ".tmp " + out + "; sleep 300"}}, &worker)
	var text []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if text, err = os.ReadFile(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			w.t.Fatal("the worker on the host wrote no env in 30 s")
		}
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(text)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && (strings.HasPrefix(k, "KRAD_ADE_") || k == "PATH") {
			vars[k] = v
		}
	}
	if vars[api.VarEndpoint] == "" || vars[api.VarTokenFile] == "" {
		w.t.Fatalf("the host's terminal has no endpoint or token file: %v", vars)
	}
	return vars
}

// TestKradMCPOnAHost: on the SSH host (a real sshd), an agent's CLI starts the static krad's
// krad mcp with its terminal's variables, the lead's build:1. That krad links no MCP server: it
// relays to one the app runs for build:1, through the forward. The client gets the lead's tools
// and the tools of the extension lent to build; list_agents lists the host's terminals; the
// extension's tool answers, running on this computer; and the session's requests went through
// build's forward, which speaks for build only.
func TestKradMCPOnAHost(t *testing.T) {
	everything := testbin.Everything(t)
	w := startWorld(t, worldOptions{extensions: []extension.Spec{
		{Name: "everything", Command: []string{everything}, Environments: []string{"build"}},
	}})
	vars := w.hostVars()
	vars[api.VarTerminal] = "build:1"
	line := []string{"env", "-i", "HOME=" + w.sshd.Home}
	for k, v := range vars {
		line = append(line, shell.Quote(k+"="+v))
	}
	line = append(line, "krad", "mcp")
	cmd := exec.Command("ssh", "-F", w.sshd.WriteSSHConfig(t, "buildbox"), "-T", "-o", "BatchMode=yes", "buildbox", strings.Join(line, " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-on-the-host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to krad mcp on the host: %v; stderr: %s", err, stderr.String())
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"list_agents", "spawn_worker", "wait_for_agent", "everything_greet"} {
		if !slices.Contains(names, want) {
			t.Errorf("the host's krad mcp offers %v: no %s", names, want)
		}
	}

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "list_agents", Arguments: map[string]any{"all": true}})
	if err != nil || res.IsError {
		t.Fatalf("list_agents: %v %+v", err, res)
	}
	var listed struct{ Agents []api.Agent }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &listed); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range listed.Agents {
		ids = append(ids, a.ID().String())
	}
	if !slices.Contains(ids, "build:1") || slices.ContainsFunc(ids, func(id string) bool { return !strings.HasPrefix(id, "build:") }) {
		t.Errorf("list_agents on the host: %v, want build's terminals only, build:1 among them", ids)
	}

	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "everything_greet", Arguments: map[string]any{"name": "the host"}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("everything_greet: %v %+v", err, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "Hi the host" {
		t.Errorf("everything_greet answered %+v, want Hi the host", res.Content[0])
	}

	if strings.Contains(stderr.String(), w.token.Reveal()) {
		t.Error("the token is in krad mcp's stderr on the host")
	}

	// The forward speaks for build only: a krad mcp on the host that names this computer's lead
	// gets no session, and says why, as krad does.
	vars[api.VarTerminal] = "main:1"
	line = line[:3]
	for k, v := range vars {
		line = append(line, shell.Quote(k+"="+v))
	}
	line = append(line, "krad", "mcp")
	out, err := exec.Command("ssh", "-F", w.sshd.WriteSSHConfig(t, "buildbox"), "-T", "-o", "BatchMode=yes", "buildbox", strings.Join(line, " ")+" </dev/null").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "krad: error: MCP: the app answered forbidden: a connection through the forward of SSH environment build speaks for build only") {
		t.Errorf("krad mcp on the host as main:1: %v, %q; want exit 3 and the forward's refusal", err, out)
	}
}
