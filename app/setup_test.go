package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/worktree"
)

// withSetup gives the repository of withRepo a [[setup]] command.
func withSetup(repo, command string) option {
	return func(c *app.Config) {
		c.Setups = []app.GroupSetup{{Rule: worktree.SetupRule{Path: repo, Command: command}}}
	}
}

// groupSetup is group name's setup as Groups lists it.
func groupSetup(t *testing.T, h *harness, name string) *worktree.Setup {
	t.Helper()
	var l worktree.List
	if err := h.decode(h.as(1), api.Groups, nil, api.AnswerGroups, &l); err != nil {
		t.Fatalf("Groups: %v", err)
	}
	for _, g := range l.Groups {
		if g.Name == name {
			return g.Setup
		}
	}
	t.Fatalf("Groups lists no %s: %+v", name, l)
	return nil
}

// TestGroupSetupRunsFirst: a worker spawned into a new group runs the config's setup command in
// its terminal, in the checkout, before its own command; meanwhile it is working (never idle,
// however quiet the setup), Groups says which terminal sets the group up, and subscribers hear
// it; then the command starts, in a checkout set up, and its prompt reaches it.
func TestGroupSetupRunsFirst(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo, withSetup(repo, `echo "setting $KRAD_ADE_GROUP up on $KRAD_ADE_PORT"; while [ ! -e go ]; do sleep 0.05; done; echo made > made.txt`))
	c := h.as(1)
	events := subscribe(t, h)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Group: "s1", Prompt: "hello",
		Command: []string{"sh", "-c", `echo "found $(cat made.txt)"; read line; echo "got $line"; sleep 60`}})
	h.waitScreen(c, w.Terminal, "setting s1 up on 20000")
	if ev := events.wait(t, api.GroupSetup); !strings.Contains(ev.Message, "group s1 is setting up in main:2") {
		t.Errorf("the group_setup AppEvent says %q", ev.Message)
	}
	if s := groupSetup(t, h, "s1"); s == nil || s.State != worktree.SetupRunning || s.Terminal != "main:2" {
		t.Errorf("Groups lists the setup as %+v, want running in main:2", s)
	}
	time.Sleep(3 * 500 * time.Millisecond) // three quiet spells of the harness
	if a := h.agent(c, api.Check, &api.CheckBody{Target: api.Target(w.Terminal)}); a.State != api.StateWorking {
		t.Errorf("a worker whose setup runs quietly is %s, want working", a.State)
	}
	dir := filepath.Join(filepath.Dir(repo), "worktrees")
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "s1"))
	if len(matches) != 1 {
		t.Fatalf("no checkout of s1 under %s", dir)
	}
	if err := os.WriteFile(filepath.Join(matches[0], "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.waitScreen(c, w.Terminal, "got hello")
	if screen := h.read(c, w.Terminal); !strings.Contains(screen, "found made") {
		t.Errorf("the command did not find the setup's file:\n%s", screen)
	}
	if s := groupSetup(t, h, "s1"); s == nil || s.State != worktree.SetupDone {
		t.Errorf("Groups lists the setup as %+v, want done", s)
	}
	// A second worker finds the group set up, and starts at once.
	w2 := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w2", Group: "s1", Command: []string{"sh", "-c", `echo second; sleep 60`}})
	h.waitScreen(c, w2.Terminal, "second")
}

// TestGroupSetupFails: a setup that fails ends its worker (failed, with the setup's exit code; its
// command never runs, its terminal shows the setup's output); subscribers hear it without the
// output; a worker spawned into the group later is refused, conflict, with the output's end; the
// group outlives its last terminal, kept for the person, who retires it.
func TestGroupSetupFails(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo, withSetup(repo, `echo 'npm ERR! missing: left-pad'; exit 3`))
	c := h.as(1)
	events := subscribe(t, h)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Group: "bad", Command: []string{"sh", "-c", `echo SHOULD-NOT-RUN; sleep 60`}})
	got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(w.Terminal), TimeoutSecs: secs(30)})
	if got.State != api.StateFailed || exitOf(got) != "3" {
		t.Errorf("the worker is %s with exit code %s, want failed with 3", got.State, exitOf(got))
	}
	screen := h.read(c, w.Terminal)
	if !strings.Contains(screen, "npm ERR! missing: left-pad") || !strings.Contains(screen, "setup failed (exited with 3)") || strings.Contains(screen, "SHOULD-NOT-RUN") {
		t.Errorf("the worker's screen:\n%s", screen)
	}
	var failed api.AppEvent
	deadline := time.Now().Add(10 * time.Second)
	for failed.Message == "" && time.Now().Before(deadline) {
		events.mu.Lock()
		for _, e := range events.got {
			if e.Kind == api.GroupSetup && strings.Contains(e.Message, "failed") {
				failed = e
			}
		}
		events.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(failed.Message, "group bad's setup failed in main:2 (exited with 3)") || strings.Contains(failed.Message, "npm ERR") {
		t.Errorf("the group_setup AppEvent of the failure says %q: want how, and no output", failed.Message)
	}

	_, err := h.call(c, api.Spawn, &api.SpawnBody{Title: "w2", Group: "bad", Command: []string{"true"}})
	if code(err) != api.CodeConflict || !strings.Contains(err.Error(), "npm ERR! missing: left-pad") || !strings.Contains(err.Error(), "krad retire bad") {
		t.Errorf("Spawn into the group = %v, want conflict with the setup's output", err)
	}

	s := groupSetup(t, h, "bad")
	if s == nil || s.State != worktree.SetupFailed || !strings.Contains(s.Output, "left-pad") {
		t.Fatalf("Groups lists the setup as %+v", s)
	}
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ev := events.wait(t, api.GroupNotRetired); !strings.Contains(ev.Message, "kept for you to look at") {
		t.Errorf("the group_not_retired AppEvent says %q", ev.Message)
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 {
		t.Fatalf("Groups after its last terminal closed: %+v, %v; want the group kept", l, err)
	}
	dir := l.Groups[0].Dir
	var r worktree.Retired
	if err := h.decode(c, api.RetireGroup, &api.RetireGroupBody{Group: "bad"}, api.AnswerRetired, &r); err != nil || !r.Removed {
		t.Fatalf("RetireGroup = %+v, %v", r, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the checkout is still there: %v", err)
	}
}
