package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/tmux"
	"github.com/krad-ade/krad/worktree"
)

// tmuxHost is a second environment on a tmux server of this computer: a Host as the bridge is one,
// without SSH in between.
type tmuxHost struct {
	socket string
	env    []string
	vars   app.HostVars
	dir    string // the environment's folder, on this computer; "" for none (no worktree ops)
}

func (h *tmuxHost) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	return tmux.Start(ctx, tmux.StartOptions{SocketPath: h.socket, ConfigFile: "/dev/null", Session: session,
		WindowName: app.HolderName, Command: app.HolderCommand, Env: h.env, OnNotification: onNote})
}
func (h *tmuxHost) Vars() app.HostVars       { return h.vars }
func (h *tmuxHost) MayHaveGroups() bool      { return true }
func (h *tmuxHost) AttachHint(string) string { return "tmux -S " + h.socket }
func (h *tmuxHost) Worktree(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	if h.dir == "" {
		return worktree.Result{}, api.Errorf(api.CodeUnavailable, "no groups here")
	}
	op.Dir = h.dir
	return worktree.Do(ctx, op), nil
}

// An environment added while the app runs is known by its ssh host, as one of the app's start
// is: a file of its folder opens in the editor's ssh_command with {host} filled, and git's prompt
// from there names that host to the person. (Both once took it for this computer: the editor's
// command for local files, on the host's path; a prompt with no host.)
func TestAddedEnvironmentKnowsItsSSHHost(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	script, log, done := recordingEditor(t)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, withRepo, func(c *app.Config) {
		c.Editor = app.Editor{Command: []string{script, "{file}"}, SSHCommand: []string{script, "--remote", "{host}", "{file}:{line}"}}
	})
	socket := filepath.Join(h.dir, "extra.sock")
	t.Cleanup(func() { killServer(socket) })
	host := &tmuxHost{socket: socket, env: h.env, dir: repo, vars: app.HostVars{Dir: repo, TerminalVars: api.TerminalVars{
		Endpoint: h.bus.Addr(), Token: h.token, BinDir: testbin.Dir(t), Path: "/usr/local/bin:/usr/bin:/bin"}}}
	if err := h.app.AddEnvironment(app.Remote{Name: "extra", Host: host, SSH: "dev@build box"}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.app.ReadyOf("extra"):
	case <-time.After(30 * time.Second):
		t.Fatal("extra did not come up within 30 s")
	}
	extra := &api.Client{Endpoint: h.bus.Addr(), Token: h.token, From: api.FromTerminal(api.TerminalID{Environment: "extra", Terminal: 1})}

	line := 3
	if _, err := h.call(extra, api.Code, &api.CodeBody{Path: filepath.Join(repo, "retry.go"), Line: &line}); err != nil {
		t.Fatalf("Code as extra:1: %v", err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(repo, "retry.go"))
	if got, want := waitFile(t, log), "--remote\ndev@build box\n"+real+":3\n"; got != want {
		t.Errorf("the editor was run with %q, want %q", got, want)
	}

	p := newTestPrompter(func(app.Prompt) (string, error) { return "hunter2", nil })
	h.app.SetPrompter(p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.askpass(ctx, "extra", api.AskpassBody{Prompt: "Password for 'https://me@example.com': ", Kind: api.AskPassword, Terminal: 1}); err != nil {
		t.Fatalf("git's prompt from extra: %v", err)
	}
	if pr := <-p.started; pr.Environment != "extra" || pr.Host != "dev@build box" {
		t.Errorf("the person was shown a prompt of environment %q from host %q, want extra from dev@build box", pr.Environment, pr.Host)
	}
}

// An environment added while the app runs comes up and is listed; removed, it is no longer
// listed (its agents sent as removed, then environment_removed) while its terminal runs on in its
// tmux session, unchanged; added again, that terminal is adopted with its number.
func TestEnvironmentAddedAndRemovedWhileRunning(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.events(ctx)
	next(t, events, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
	socket := filepath.Join(h.dir, "extra.sock")
	t.Cleanup(func() { killServer(socket) })
	host := &tmuxHost{socket: socket, env: h.env, vars: app.HostVars{TerminalVars: api.TerminalVars{
		Endpoint: h.bus.Addr(), Token: h.token, BinDir: testbin.Dir(t), Path: "/usr/local/bin:/usr/bin:/bin"}}}
	listed := func(id string) bool {
		for _, a := range h.agents(h.as(0)) {
			if a.ID().String() == id {
				return true
			}
		}
		return false
	}
	panePID := func() string {
		out, err := exec.Command("tmux", "-S", socket, "list-panes", "-t", "extra", "-F", "#{pane_pid}").Output()
		if err != nil {
			t.Fatalf("the session extra: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	add := func() {
		t.Helper()
		if err := h.app.AddEnvironment(app.Remote{Name: "extra", Host: host}, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.app.ReadyOf("extra"):
		case <-time.After(30 * time.Second):
			t.Fatal("extra did not come up within 30 s")
		}
	}

	add()
	next(t, events, "environment_added", appEvent(api.EnvironmentAdded))
	if !listed("extra:1") {
		t.Fatalf("List after the add: %v", h.agents(h.as(0)))
	}
	if got := h.app.Environments(); len(got) != 2 || got[1] != "extra" {
		t.Fatalf("Environments() = %v, want [main extra]", got)
	}
	if err := h.app.AddEnvironment(app.Remote{Name: "extra", Host: host}, nil); err == nil {
		t.Fatal("a second environment extra was added")
	}
	pid := panePID()

	if err := h.app.RemoveEnvironment(context.Background(), "extra"); err != nil {
		t.Fatal(err)
	}
	next(t, events, "extra:1 removed", agentEvent(api.AgentRemoved, 1, ""))
	next(t, events, "environment_removed", appEvent(api.EnvironmentRemoved))
	if listed("extra:1") {
		t.Fatalf("List after the removal still shows extra:1: %v", h.agents(h.as(0)))
	}
	if got := h.app.Environments(); len(got) != 1 {
		t.Fatalf("Environments() = %v after the removal, want [main]", got)
	}
	if got := panePID(); got != pid || !running(atoi(t, pid)) {
		t.Fatalf("extra:1's process after the removal: %s (running %v), was %s", got, running(atoi(t, got)), pid)
	}
	if err := h.app.RemoveEnvironment(context.Background(), app.Local); err == nil {
		t.Fatal("main was removed")
	}

	add()
	if !listed("extra:1") || listed("extra:2") {
		t.Fatalf("List after the second add: %v; want extra:1 adopted, no extra:2", h.agents(h.as(0)))
	}
	if got := panePID(); got != pid {
		t.Fatalf("extra:1's process after the second add: %s, was %s", got, pid)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}
