package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/gittest"
	"github.com/krad-ade/krad/worktree"
)

// TestSyncGroup: SyncGroup through the bus merges the main checkout's HEAD into a group's branch
// (rebases with how rebase); a conflict is conflict, naming the file; a Client may not.
func TestSyncGroup(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	gitIn(t, repo, "config", "user.name", "Person")
	gitIn(t, repo, "config", "user.email", "p@example.com")
	h := start(t, lead(), withRepo)
	c := h.as(1)
	var g worktree.Group
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "s"}, api.AnswerWorktree, &g); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.Dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, g.Dir, "add", "a.txt")
	gitIn(t, g.Dir, "commit", "-q", "-m", "worker")
	if err := os.WriteFile(filepath.Join(repo, "retry.go"), []byte("package retry // main's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "commit", "-q", "-am", "main moves on")
	onto := gitIn(t, repo, "rev-parse", "HEAD")

	if _, err := h.call(h.as(0), api.SyncGroup, &api.SyncGroupBody{Group: "s"}); code(err) != api.CodeForbidden {
		t.Errorf("SyncGroup as a Client: %v, want forbidden", err)
	}
	if _, err := h.call(c, api.SyncGroup, &api.SyncGroupBody{Group: "s", How: "squash"}); code(err) != api.CodeBadRequest {
		t.Errorf("SyncGroup how squash: %v, want bad_request", err)
	}
	var s worktree.Synced
	if err := h.decode(c, api.SyncGroup, &api.SyncGroupBody{Group: "s", How: api.SyncRebase}, api.AnswerSynced, &s); err != nil {
		t.Fatalf("SyncGroup: %v", err)
	}
	if s.How != api.SyncRebase || s.Onto != onto || s.Commits != 1 || gitIn(t, repo, "rev-parse", "krad/s^") != onto {
		t.Errorf("SyncGroup answered %+v", s)
	}
	// Both change retry.go: a conflict, and nothing changed.
	if err := os.WriteFile(filepath.Join(g.Dir, "retry.go"), []byte("package retry // the worker's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, g.Dir, "commit", "-q", "-am", "worker again")
	if err := os.WriteFile(filepath.Join(repo, "retry.go"), []byte("package retry // main's again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "commit", "-q", "-am", "main again")
	tip := gitIn(t, repo, "rev-parse", "krad/s")
	_, err := h.call(c, api.SyncGroup, &api.SyncGroupBody{Group: "s"})
	if code(err) != api.CodeConflict || !strings.Contains(err.Error(), "retry.go") {
		t.Errorf("SyncGroup with a conflict: %v, want conflict naming retry.go", err)
	}
	if gitIn(t, repo, "rev-parse", "krad/s") != tip || gitIn(t, g.Dir, "status", "--porcelain") != "" {
		t.Error("the conflicting sync changed the group")
	}
}

// TestPushGroup: a lead's PushGroup pushes the group's branch to the repository's remote, a real
// git server over HTTP with basic auth: git asks the password, which comes to the person (the
// Prompter) as the app's own git's, and the branch arrives; the password is nowhere else. With
// pr, gh opens the pull request; without gh, unavailable and nothing pushed. A worker and a
// Client are forbidden; the person pushes through the app too (the UI's PushGroup).
func TestPushGroup(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null") // no helper of this machine's user answers
	url, bare := gitServer(t)
	repo, _, withRepo := withRepo(t)
	u := strings.Replace(url, "http://", "http://me@", 1) + "/r.git"
	gitIn(t, repo, "remote", "add", "origin", u)
	h := start(t, lead(), withRepo, func(c *app.Config) { c.Askpass = true })
	p := newTestPrompter(func(app.Prompt) (string, error) { return gitPassword, nil })
	h.app.SetPrompter(p)
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "w", Group: "ship", Command: []string{"sh", "-c",
		`echo shipped > s.txt && git add s.txt && git -c user.name=w -c user.email=w@x commit -qm ship && echo committed; sleep 60`}})
	h.waitScreen(c, w.Terminal, "committed")
	tip := gitIn(t, repo, "rev-parse", "krad/ship")

	if _, err := h.call(h.as(w.Terminal), api.PushGroup, &api.PushGroupBody{Group: "ship"}); code(err) != api.CodeForbidden {
		t.Errorf("PushGroup as a worker: %v, want forbidden", err)
	}
	if _, err := h.call(h.as(0), api.PushGroup, &api.PushGroupBody{Group: "ship"}); code(err) != api.CodeForbidden {
		t.Errorf("PushGroup as a Client: %v, want forbidden", err)
	}
	var pushed worktree.Pushed
	if err := h.decode(c, api.PushGroup, &api.PushGroupBody{Group: "ship"}, api.AnswerPushed, &pushed); err != nil {
		t.Fatalf("PushGroup: %v", err)
	}
	if pushed.Commit != tip || pushed.Remote != "origin" || pushed.Branch != "krad/ship" {
		t.Errorf("PushGroup answered %+v", pushed)
	}
	if got := gitIn(t, bare, "rev-parse", "refs/heads/krad/ship"); got != tip {
		t.Errorf("the server has krad/ship at %s, want %s", got, tip)
	}
	p.mu.Lock()
	shown := append([]app.Prompt(nil), p.shown...)
	p.mu.Unlock()
	if len(shown) != 1 || shown[0].Kind != api.AskPassword || shown[0].Terminal != 0 || !strings.Contains(shown[0].Text, "me@127.0.0.1") {
		t.Errorf("the person was shown %+v, want the app's own git's password prompt", shown)
	}
	if where := sweepProc(gitPassword); where != "" {
		t.Errorf("the password is in %s", where)
	}

	// A pull request, with gh.
	gh := gittest.FakeGH(t, "https://github.com/me/app/pull/9", "")
	if err := h.decode(c, api.PushGroup, &api.PushGroupBody{Group: "ship", PR: true, Title: "Ship it", Draft: true}, api.AnswerPushed, &pushed); err != nil {
		t.Fatalf("PushGroup with pr: %v", err)
	}
	if pushed.PR != "https://github.com/me/app/pull/9" || !pushed.UpToDate {
		t.Errorf("PushGroup with pr answered %+v", pushed)
	}
	if got := gh.Ran(t); !slices.Contains(got, "--title=Ship it") || !slices.Contains(got, "--draft") || !slices.Contains(got, "--head=krad/ship") {
		t.Errorf("gh ran with %q", got)
	}

	// The person, through the app (the UI's p).
	if pushed, err := h.app.PushGroup(context.Background(), w.ID(), false); err != nil || !pushed.UpToDate {
		t.Errorf("the person's PushGroup: %+v, %v", pushed, err)
	}
}

// TestPRWithoutGH: where gh is not installed, a pull request is unavailable, with the hint to
// install it, and nothing is pushed.
func TestPRWithoutGH(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	bare := filepath.Join(t.TempDir(), "r.git")
	gitIn(t, repo, "init", "-q", "--bare", bare)
	gitIn(t, repo, "remote", "add", "origin", bare)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	h := start(t, lead(), withRepo)
	c := h.as(1)
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "nogh"}, api.AnswerWorktree, &worktree.Group{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // the app's own process: where this computer's groups' git runs
	_, err = h.call(c, api.PushGroup, &api.PushGroupBody{Group: "nogh", PR: true})
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), worktree.GHInstallHint) {
		t.Errorf("PushGroup with pr, no gh: %v, want unavailable with the hint", err)
	}
	if out, _ := exec.Command("git", "-C", bare, "for-each-ref").Output(); len(out) != 0 {
		t.Errorf("the remote got %s", out)
	}
}
