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
	"github.com/krad-ade/krad/kradtest/proctest"
	"github.com/krad-ade/krad/kradtest/testbin"
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
	root   string // the worktrees root, with dir
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
	op.Dir, op.Root = h.dir, h.root
	return worktree.Do(ctx, op), nil
}

// extraHost is a tmuxHost on a tmux server of the test's own (ended with it), whose terminals
// reach h's bus; dir and root, when set, are its folder and worktrees root.
func (h *harness) extraHost(dir, root string) *tmuxHost {
	socket := filepath.Join(h.dir, "extra.sock")
	h.t.Cleanup(func() { killServer(socket) })
	return &tmuxHost{socket: socket, env: h.env, dir: dir, root: root, vars: app.HostVars{Dir: dir, TerminalVars: api.TerminalVars{
		Endpoint: h.bus.Addr(), Token: h.token, BinDir: testbin.Dir(h.t), Path: "/usr/local/bin:/usr/bin:/bin"}}}
}

// Two environments in one repository (two Host aliases of one host, say): each retires only its
// own groups whose terminals closed while the app was away. An environment that comes up
// retires its own orphan, and leaves the other's group (and the checkout its worker is in)
// alone; a terminal of one cannot join the other's group, which its own environment would
// retire from under it.
func TestGroupsOfTwoEnvironmentsInOneRepository(t *testing.T) {
	t.Parallel()
	repo, root, withRepo := withRepo(t)
	h := start(t, withRepo)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.events(ctx)
	next(t, events, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
	// Groups a terminal joined, none in them now: main's "theirs", made by main:1 through the
	// app (main looked for orphans as it came up, before it was made), and extra's "orphan".
	join := func(env, name string) worktree.Result {
		return worktree.Do(context.Background(), worktree.Op{Op: worktree.OpCreate, Dir: repo, Root: root, Env: env, Create: &worktree.CreateOptions{Name: name}, Join: true})
	}
	var theirs worktree.Group
	if err := h.decode(h.as(1), api.CreateWorktree, &api.CreateWorktreeBody{Name: "theirs"}, api.AnswerWorktree, &theirs); err != nil || theirs.Env != "main" {
		t.Fatalf("CreateWorktree theirs as main:1: %+v, %v; want a group of main", theirs, err)
	}
	for _, g := range []struct{ env, name string }{{"main", "theirs"}, {"extra", "orphan"}} {
		if res := join(g.env, g.name); res.Error != nil || res.Group == nil || res.Group.Env != g.env || !res.Group.Joined {
			t.Fatalf("%s joins group %s: %+v", g.env, g.name, res)
		}
	}
	host := h.extraHost(repo, root)
	if err := h.app.AddEnvironment(app.Remote{Name: "extra", Host: host, SSH: "box"}, nil); err != nil {
		t.Fatal(err)
	}
	ev := next(t, events, "extra's orphan retired", func(a api.Answer) bool {
		var ev api.AppEvent
		return a.Decode("AppEvent", &ev) == nil && (ev.Kind == api.GroupRetired || ev.Kind == api.GroupNotRetired)
	})
	var retired api.AppEvent
	_ = ev.Decode("AppEvent", &retired)
	if retired.Kind != api.GroupRetired || retired.Environment != "extra" || !strings.Contains(retired.Message, "group orphan retired") {
		t.Fatalf("the first retire: %+v, want extra's orphan", retired)
	}
	// Both would have retired in the same look, at once: a while more, for one that is late.
	time.Sleep(2 * time.Second)
	for {
		select {
		case a := <-events:
			var ev api.AppEvent
			if a.Decode("AppEvent", &ev) == nil && (ev.Kind == api.GroupRetired || ev.Kind == api.GroupNotRetired) {
				t.Errorf("another retire: %+v", ev)
			}
			continue
		default:
		}
		break
	}
	res := worktree.Do(context.Background(), worktree.Op{Op: worktree.OpGroups, Dir: repo, Root: root})
	if res.Error != nil || len(res.List.Groups) != 1 || res.List.Groups[0].Name != "theirs" || res.List.Groups[0].Missing {
		t.Fatalf("the groups after extra came up: %+v, want main's theirs alone", res)
	}
	if _, err := os.Stat(res.List.Groups[0].Dir); err != nil {
		t.Errorf("main's group's checkout: %v", err)
	}

	// A worker of extra cannot join main's group (a Spawn into it is this op).
	if res := join("extra", "theirs"); res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Error(), "group theirs is environment main's") {
		t.Errorf("extra joins main's group: %+v, want a conflict that names main", res)
	}
}

// An environment added while the app runs is known by its ssh host, as one of the app's start
// is: a file of its folder opens in the editor's ssh_command with {host} filled, and git's prompt
// from there names that host to the person. (Both once took it for this computer: the editor's
// command for local files, on the host's path; a prompt with no host.)
func TestAddedEnvironmentKnowsItsSSHHost(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	script, log, done := recordingEditor(t)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := start(t, withRepo, func(c *app.Config) {
		c.Editor = app.Editor{Command: []string{script, "{file}"}, SSHCommand: []string{script, "--remote", "{host}", "{file}:{line}"}}
	})
	host := h.extraHost(repo, "")
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
	if _, err := h.askpass(ctx, "extra", api.AskpassBody{Prompt: "Password for 'https://me@example.com': ", Kind: api.AskPassword, Terminal: 1,
		Key: paneAskKey(t, host.socket, "extra", 1)}); err != nil {
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
	t.Parallel()
	h := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := h.events(ctx)
	next(t, events, "the snapshot", func(a api.Answer) bool { return a.Name == api.AnswerAgents })
	host := h.extraHost("", "")
	socket := host.socket
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
	// The terminal's shell, once krad-ade-agents shell has replaced itself with it: a process
	// that execs from one of its threads (a Go program does) reads as a zombie for a moment, which
	// is not the end this test looks for.
	waitFor(t, 10*time.Second, "extra:1's shell", func() bool {
		out, err := exec.Command("tmux", "-S", socket, "list-panes", "-t", "extra", "-F", "#{pane_current_command}").Output()
		return err == nil && strings.TrimSpace(string(out)) == "sh"
	})
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
	if got := panePID(); got != pid || !proctest.Running(atoi(t, pid)) {
		t.Fatalf("extra:1's process after the removal: %s (running %v), was %s", got, proctest.Running(atoi(t, got)), pid)
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
