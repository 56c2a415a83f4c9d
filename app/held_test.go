package app_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/apptest"
	"github.com/krad-ade/krad/worktree"
)

// TestGroupHeldByNestedRepo: a worker makes a repository of its own in a folder of its group's
// checkout and commits there; when the group's last terminal closes, the checkout stays (the
// commit lives only there), the group is listed held with the folder, subscribers and the log
// say so. The forced retire (what the person asks for) then removes it.
func TestGroupHeldByNestedRepo(t *testing.T) {
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

	// The person's retire, forced.
	res := worktree.Do(t.Context(), worktree.Op{Op: worktree.OpRetire, Dir: repo, Group: "nest", Force: true})
	if res.Error != nil || !res.Retired.Removed {
		t.Fatalf("forced retire: %+v, %v", res.Retired, res.Error)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the forced retire, the checkout is still there (%v)", err)
	}
}
