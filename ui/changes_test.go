package ui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/worktree"
)

// changesApp answers Changes as the app would have; the model's other calls are not made here.
type changesApp struct {
	App
	changes worktree.Changes
	err     error
	asked   []api.TerminalID
}

func (a *changesApp) Changes(_ context.Context, id api.TerminalID) (worktree.Changes, error) {
	a.asked = append(a.asked, id)
	return a.changes, a.err
}

// withChanges is the model of model() with its agents in groups, over an app that answers
// Changes with c or err, after c on main:2.
func withChanges(t *testing.T, c worktree.Changes, err error) (Model, *changesApp) {
	t.Helper()
	fake := &changesApp{changes: c, err: err}
	m := model(t,
		agent("main", 1, api.RoleLead, api.StateWorking, "lead"),
		api.Agent{Environment: "main", Terminal: 2, Role: api.RoleWorker, State: api.StateWorking, Title: "fix", Group: "fix-retry", Since: t0},
	)
	m.opts.App = fake
	m = update(t, m, key("j"))
	next, cmd := m.Update(key("c"))
	m = next.(Model)
	if s := screen(m); !strings.Contains(s, "Changes of group fix-retry (main:2)") || !strings.Contains(s, "reading the changes of group fix-retry") {
		t.Fatalf("c on main:2:\n%s", s)
	}
	return update(t, m, collect(cmd)...), fake
}

const retryPatch = "diff --git a/retry.go b/retry.go\n" +
	"index 1111111..2222222 100644\n" +
	"--- a/retry.go\n" +
	"+++ b/retry.go\n" +
	"@@ -1 +1,2 @@\n" +
	" package retry\n" +
	"-// old\n" +
	"+\t// fixed\n"

func TestChangesView(t *testing.T) {
	m, fake := withChanges(t, worktree.Changes{Group: "fix-retry", Base: "abcdef0123456789", Head: "0123456789abcdef",
		Commits: []worktree.Commit{{Hash: "0123456789abcdef", Subject: "fix the flaky retry"}},
		Files:   []worktree.File{{Path: "retry.go", Status: "M", Added: 1, Deleted: 1}, {Path: "go.sum", Status: "M", Added: 40, LeftOut: worktree.LeftOutGenerated}},
		Patch:   retryPatch,
	}, nil)
	if len(fake.asked) != 1 || fake.asked[0] != (api.TerminalID{Environment: "main", Terminal: 2}) {
		t.Errorf("Changes was asked for %v, want main:2 once", fake.asked)
	}
	s := screen(m)
	for _, want := range []string{
		"group fix-retry: 0123456789 against its base abcdef0123",
		"commit 0123456789 fix the flaky retry",
		" M  retry.go  +1 -1",
		" M  go.sum  +40 -0  (patch left out: generated)",
		"2 files changed, 41 insertions(+), 1 deletions(-)",
		"@@ -1 +1,2 @@", "-// old", "+       // fixed",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the changes view lacks %q:\n%s", want, s)
		}
	}
	// Coloured: the added, deleted and hunk lines carry their styles.
	out := m.Render()
	for _, want := range []string{styleAdded.Render("+       // fixed"), styleDeleted.Render("-// old"), styleHunk.Render("@@ -1 +1,2 @@")} {
		if !strings.Contains(out, want) {
			t.Errorf("the view lacks the styled line %q", want)
		}
	}
	if strings.Contains(s, "no changes") {
		t.Errorf("changes shown as none:\n%s", s)
	}
	m = update(t, m, key("esc"))
	if m.mode != modeList || strings.Contains(screen(m), "Changes of group") {
		t.Errorf("Esc did not close the view:\n%s", screen(m))
	}
}

// A patch is the files' bytes as they are: an escape sequence in a file reaches the screen
// escaped, never as itself.
func TestChangesViewEscapesThePatch(t *testing.T) {
	evil := "+evil \x1b[2J\x1b]0;pwned\x07 \xff end\r"
	m, _ := withChanges(t, worktree.Changes{Group: "fix-retry", Base: "abc",
		Files: []worktree.File{{Path: "a\x1b[31m.txt", Status: "A", Added: 1}},
		Patch: "diff --git a/x b/x\n@@ -0,0 +1 @@\n" + evil + "\n"}, nil)
	out := m.Render()
	for _, bad := range []string{"\x1b[2J", "\x1b]0;", "\x07", "\xff", "\r", "\x1b[31m.txt"} {
		if strings.Contains(out, bad) {
			t.Errorf("the view holds %q as itself", bad)
		}
	}
	s := screen(m)
	for _, want := range []string{`+evil \x1b[2J\x1b]0;pwned\a \xff end\r`, `a\x1b[31m.txt`} {
		if !strings.Contains(s, want) {
			t.Errorf("the view lacks %q, escaped:\n%s", want, s)
		}
	}
}

// An error is an error on the screen, never "no changes"; a group with none says so.
func TestChangesViewErrorAndNone(t *testing.T) {
	m, _ := withChanges(t, worktree.Changes{}, api.Errorf(api.CodeUnavailable, "git is not installed on the host"))
	if s := prose(m); !strings.Contains(s, "error: the changes of group fix-retry could not be read: ") ||
		!strings.Contains(s, "git is not installed on the host") || strings.Contains(s, "no changes") {
		t.Errorf("an error:\n%s", screen(m))
	}
	m, _ = withChanges(t, worktree.Changes{}, errors.New("context deadline exceeded"))
	if s := prose(m); !strings.Contains(s, "could not be read: context deadline exceeded") || strings.Contains(s, "no changes") {
		t.Errorf("a timeout:\n%s", screen(m))
	}
	m, _ = withChanges(t, worktree.Changes{Group: "fix-retry", Base: "abc", Files: []worktree.File{}}, nil)
	if s := screen(m); !strings.Contains(s, "no changes since its base") {
		t.Errorf("none:\n%s", s)
	}
	// An agent in no group: c says so.
	m = update(t, model(t), key("c"))
	if s := screen(m); m.mode != modeList || !strings.Contains(s, "c shows a group's changes: main:1 works in no group") {
		t.Errorf("c on an agent in no group:\n%s", s)
	}
}

// A long patch scrolls: j, PgDn and G move down, g back to the top; the view fits the screen at
// each size, and follows a resize.
func TestChangesViewScrolls(t *testing.T) {
	var patch strings.Builder
	patch.WriteString("diff --git a/big b/big\n@@ -0,0 +1,300 @@\n")
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&patch, "+line %03d\n", i)
	}
	m, _ := withChanges(t, worktree.Changes{Group: "fix-retry", Base: "abc", Files: []worktree.File{{Path: "big", Status: "A", Added: 300}}, Patch: patch.String()}, nil)
	if s := screen(m); strings.Contains(s, "+line 300") || !strings.Contains(s, "0%") {
		t.Fatalf("the view's first page:\n%s", s)
	}
	m = update(t, m, key("G"))
	if s := screen(m); !strings.Contains(s, "+line 300") || !strings.Contains(s, "100%") {
		t.Errorf("after G:\n%s", s)
	}
	m = update(t, m, key("g"), key("j"), tea.KeyPressMsg{Code: tea.KeyPgDown})
	if s := screen(m); strings.Contains(s, "group fix-retry:") || strings.Contains(s, "+line 300") {
		t.Errorf("after g, j, PgDn:\n%s", s)
	}
	for _, size := range [][2]int{{80, 24}, {200, 60}, {40, 10}} {
		m = update(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]}, key("G"))
		lines := strings.Split(screen(m), "\n")
		if len(lines) != size[1] || !strings.Contains(screen(m), "+line 300") {
			t.Errorf("%v: %d lines:\n%s", size, len(lines), screen(m))
		}
		for _, l := range lines {
			if w := len([]rune(l)); w > size[0] {
				t.Errorf("%v: a line of %d cells: %q", size, w, l)
			}
		}
	}
}
