package app_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/apptest"
	"github.com/krad-ade/krad/worktree"
)

// TestGroupHeldByNestedRepo: a worker makes a repository of its own in a folder of its group's
// checkout and commits there; when the group's last terminal closes, the checkout stays (the
// commit lives only there), the group is listed held with the folder, subscribers and the log
// say so. The forced retire (what the person asks for) then removes it.
func TestGroupHeldByNestedRepo(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	var log apptest.Buffer
	h := start(t, lead(), withRepo, withLog(&log))
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "nester", Group: "nest", Command: []string{"sh", "-c",
		`mkdir -p vendor/inner && cd vendor/inner && git init -q && echo mine > a.txt && git add a.txt && git -c user.name=w -c user.email=w@w commit -q -m mine && echo committed; sleep 60`}})
	h.waitScreen(c, w.Terminal, "committed")
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 {
		t.Fatalf("Groups: %+v, %v", l, err)
	}
	dir := l.Groups[0].Dir
	nested := filepath.Join(dir, "vendor", "inner")
	commit := gitIn(t, nested, "rev-parse", "HEAD")

	events := subscribe(t, h)
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ev := events.wait(t, api.GroupNotRetired)
	if !strings.Contains(ev.Message, "group nest is held") || !strings.Contains(ev.Message, "vendor/inner") {
		t.Errorf("the AppEvent says %q", ev.Message)
	}
	if got := gitIn(t, nested, "cat-file", "-t", commit); got != "commit" {
		t.Errorf("the nested commit %s is %q", commit, got)
	}
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 || !reflect.DeepEqual(l.Groups[0].Held, []string{"vendor/inner"}) {
		t.Errorf("Groups after the close: %+v, %v; want nest held by vendor/inner", l, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "group held") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	line := ""
	for _, s := range strings.Split(log.String(), "\n") {
		if strings.Contains(s, "group held") {
			line = s
		}
	}
	if !strings.Contains(line, "group=nest") || !strings.Contains(line, "vendor/inner") {
		t.Errorf("the log's line for the hold is %q, want one naming group nest and vendor/inner", line)
	}

	// The person's retire: without force it is held still; with force the checkout goes.
	var r worktree.Retired
	if err := h.decode(c, api.RetireGroup, &api.RetireGroupBody{Group: "nest"}, api.AnswerRetired, &r); err != nil || r.Removed || !reflect.DeepEqual(r.Held, []string{"vendor/inner"}) {
		t.Errorf("RetireGroup without force: %+v, %v; want held by vendor/inner", r, err)
	}
	r = worktree.Retired{}
	if err := h.decode(c, api.RetireGroup, &api.RetireGroupBody{Group: "nest", Force: true}, api.AnswerRetired, &r); err != nil || !r.Removed || r.Held != nil {
		t.Fatalf("RetireGroup with force: %+v, %v; want removed", r, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the forced retire, the checkout is still there (%v)", err)
	}
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 0 {
		t.Errorf("Groups after the forced retire: %+v, %v", l, err)
	}
	_ = repo
}

// TestRetireGroupRefusesAGroupInUse: RetireGroup refuses a group a terminal works in, naming the
// terminal, and touches nothing; a plain group with no terminal retires as its last terminal
// closing would.
func TestRetireGroupRefusesAGroupInUse(t *testing.T) {
	t.Parallel()
	_, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "busy", Group: "busy", Command: []string{"sh", "-c", "echo ready; sleep 60"}})
	h.waitScreen(c, w.Terminal, "ready")
	_, err := h.call(c, api.RetireGroup, &api.RetireGroupBody{Group: "busy", Force: true})
	if code(err) != api.CodeConflict || !strings.Contains(err.Error(), "has terminals in it") {
		t.Errorf("RetireGroup of a group in use: %v, want conflict", err)
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 {
		t.Fatalf("Groups: %+v, %v", l, err)
	}
	if _, err := os.Stat(l.Groups[0].Dir); err != nil {
		t.Errorf("the refused retire touched the checkout: %v", err)
	}
	var g worktree.Group
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "idle"}, api.AnswerWorktree, &g); err != nil {
		t.Fatal(err)
	}
	var r worktree.Retired
	if err := h.decode(c, api.RetireGroup, &api.RetireGroupBody{Group: "idle"}, api.AnswerRetired, &r); err != nil || !r.Removed || !r.BranchDeleted || r.Held != nil {
		t.Errorf("RetireGroup of a plain group: %+v, %v; want removed, its empty branch deleted", r, err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("the plain group's checkout is still there (%v)", err)
	}
}
