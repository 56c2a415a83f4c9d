package bridge_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/gittest"
	"github.com/krad-ade/krad/kradtest/leaktest"
	"github.com/krad-ade/krad/worktree"
)

// TestIncludedFilesOnTheHost: on an SSH host, a new group's checkout gets the ignored files that
// the host repository's .worktreeinclude and the config's rule (sent with the operation) name,
// copied there by the static krad; a symlink among them is skipped, and said.
func TestIncludedFilesOnTheHost(t *testing.T) {
	var repo string
	w := startWorld(t, worldOptions{dir: "~/src/proj", host: func(w *world) { repo = hostRepo(t, w.sshd.Home) }})
	files := map[string]string{
		".gitignore":         ".env\n*.local\nlink.env\n",
		".env":               "TOKEN=1\n",
		"proj/dev.local":     "dev\n",
		worktree.IncludeFile: ".env\nlink.env\n../../secret\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(w.sshd.Home, "secret")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(repo, "link.env")); err != nil {
		t.Fatal(err)
	}
	res := w.worktreeOp(worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "inc"},
		Setups: []worktree.SetupRule{{Path: "~/src", Include: []string{"*.local"}}}})
	if res.Error != nil || res.Group == nil {
		t.Fatalf("create: %+v", res)
	}
	g := res.Group
	for name, content := range map[string]string{".env": "TOKEN=1\n", "proj/dev.local": "dev\n"} {
		if got, err := os.ReadFile(filepath.Join(g.Dir, name)); err != nil || string(got) != content {
			t.Errorf("%s in the host's checkout: %q, %v; want %q", name, got, err, content)
		}
	}
	if _, err := os.Lstat(filepath.Join(g.Dir, "link.env")); err == nil {
		t.Error("the symlink link.env was copied")
	}
	if _, err := os.Lstat(filepath.Join(g.Dir, "secret")); err == nil {
		t.Error("../../secret was copied")
	}
	if in := g.Included; in == nil || in.Files != 2 || len(in.Skipped) != 1 || !strings.Contains(in.Skipped[0], "link.env (a symlink)") {
		t.Errorf("Included = %+v, want 2 files and link.env skipped", in)
	}
}

// gitHost runs git in dir as the host's user would, with an identity.
func gitHost(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestSyncOnTheHost: a group of an SSH environment is synced on the host, by the static krad
// there: merged onto the main checkout's HEAD; and a sync that conflicts names the file and
// leaves the group's branch and files as they were.
func TestSyncOnTheHost(t *testing.T) {
	var repo string
	w := startWorld(t, worldOptions{dir: "~/src/proj", host: func(w *world) { repo = hostRepo(t, w.sshd.Home) }})
	gitHost(t, repo, "config", "user.name", "Host Person")
	gitHost(t, repo, "config", "user.email", "hp@example.com")
	res := w.worktreeOp(worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "s"}})
	if res.Error != nil {
		t.Fatalf("create: %+v", res)
	}
	g := res.Group
	if err := os.WriteFile(filepath.Join(g.Dir, "proj", "readme"), []byte("one\nTWO\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitHost(t, g.Dir, "commit", "-q", "-am", "the worker's")
	if err := os.WriteFile(filepath.Join(repo, "proj", "other"), []byte("other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitHost(t, repo, "add", ".")
	gitHost(t, repo, "commit", "-q", "-m", "main moves on")
	res = w.worktreeOp(worktree.Op{Op: worktree.OpSync, Sync: &worktree.SyncOptions{Group: "s"}})
	if res.Error != nil || res.Synced == nil || res.Synced.How != worktree.SyncMerge || res.Synced.Onto != gitHost(t, repo, "rev-parse", "HEAD") {
		t.Fatalf("sync: %+v", res)
	}
	if who := gitHost(t, repo, "log", "-1", "--format=%cn|%P", "krad/s"); who != "Host Person|"+res.Synced.Old+" "+res.Synced.Onto {
		t.Errorf("the merge on the host: %s", who)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "proj", "other")); err != nil {
		t.Errorf("the group's checkout lacks main's file: %v", err)
	}

	if err := os.WriteFile(filepath.Join(repo, "proj", "readme"), []byte("one\nzwei\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitHost(t, repo, "commit", "-q", "-am", "main's readme")
	tip := gitHost(t, repo, "rev-parse", "krad/s")
	before, _ := os.ReadFile(filepath.Join(g.Dir, "proj", "readme"))
	res = w.worktreeOp(worktree.Op{Op: worktree.OpSync, Sync: &worktree.SyncOptions{Group: "s"}})
	if res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "proj/readme") {
		t.Fatalf("sync with a conflict: %+v", res)
	}
	after, _ := os.ReadFile(filepath.Join(g.Dir, "proj", "readme"))
	if gitHost(t, repo, "rev-parse", "krad/s") != tip || string(after) != string(before) {
		t.Error("the conflicting sync changed the group")
	}
}

// callErr makes request name as c, and returns its error: the answer's, or the call's.
func (w *world) callErr(c *api.Client, name api.Name, body any) *api.Error {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Call(ctx, api.NewRequest(name, body))
	var ae *api.Error
	if err != nil && !errors.As(err, &ae) {
		w.t.Fatalf("%s: %v", name, err)
	}
	return ae
}

// TestPushOnTheHost: a lead's PushGroup for a group of an SSH environment pushes from the host's
// repository, with the host's git, to a real git server over HTTP with basic auth that the host
// reaches (on loopback: the host is this machine). git's username and password prompts come to
// the person through the host's krad-ade-askpass, as the app's own git of build (terminal 0, host
// buildbox), with the app's own key there; the answers push. A worker is forbidden. With pr, the
// gh on the host's PATH opens the pull request, in the group's checkout on the host; with no gh
// there, unavailable with the install hint and nothing pushed. The person's push (the UI's p)
// goes the same way. The password is in no process's command line or environment, and in no
// file of the host's home or the app's.
func TestPushOnTheHost(t *testing.T) {
	t.Parallel()
	const password = "host-Push-Pa55-4f2e"
	start := time.Now()
	url, bare := gittest.Server(t, "me", password)
	gh := gittest.WriteGH(t, "https://github.com/me/app/pull/21", "")
	var repo string
	w := startWorld(t, worldOptions{dir: "~/src/proj", hostEnv: []string{"PATH=" + gh.Dir + ":/usr/local/bin:/usr/bin:/bin"},
		host: func(w *world) {
			repo = hostRepo(t, w.sshd.Home)
			gitHost(t, repo, "remote", "add", "origin", url+"/r.git")
		}})
	p := newPrompter(func(pr app.Prompt) string {
		if pr.Kind == api.AskUsername {
			return "me"
		}
		return password
	})
	w.app.SetPrompter(p)
	lead := w.as(1)
	var worker api.Agent
	w.call(lead, api.Spawn, &api.SpawnBody{Title: "w", Group: "ship", Command: []string{"sh", "-c",
		`echo shipped > s.txt && git add s.txt && git -c user.name=w -c user.email=w@x commit -qm ship && echo commi""tted; sleep 600`}}, &worker)
	w.screen(lead, worker.Terminal, "committed")
	tip := gitHost(t, repo, "rev-parse", "krad/ship")
	base := gitHost(t, repo, "symbolic-ref", "--short", "HEAD")
	list := w.worktreeOp(worktree.Op{Op: worktree.OpGroups})
	if list.List == nil || len(list.List.Groups) != 1 {
		t.Fatalf("the host's groups: %+v", list)
	}
	dir := list.List.Groups[0].Dir

	if e := w.callErr(w.as(worker.Terminal), api.PushGroup, &api.PushGroupBody{Group: "ship"}); e == nil || e.Code != api.CodeForbidden {
		t.Errorf("PushGroup as the worker: %v, want forbidden", e)
	}
	var pushed worktree.Pushed
	w.call(lead, api.PushGroup, &api.PushGroupBody{Group: "ship"}, &pushed)
	if pushed.Commit != tip || pushed.Remote != "origin" || pushed.Branch != "krad/ship" || pushed.UpToDate {
		t.Errorf("PushGroup answered %+v", pushed)
	}
	if got := git(t, bare, "rev-parse", "refs/heads/krad/ship"); got != tip {
		t.Errorf("the server has krad/ship at %s, want %s", got, tip)
	}
	var kinds []string
	for range 2 {
		select {
		case pr := <-p.shown:
			kinds = append(kinds, pr.Kind)
			if pr.Environment != "build" || pr.Terminal != 0 || pr.Host != "buildbox" || !strings.Contains(pr.Text, "127.0.0.1") {
				t.Errorf("the person was shown %+v, want the app's own git of build on buildbox", pr)
			}
		default:
		}
	}
	if !slices.Equal(kinds, []string{api.AskUsername, api.AskPassword}) {
		t.Errorf("the person was asked %v, want a username, then a password", kinds)
	}

	// A pull request, with the host's gh, in the group's checkout there.
	w.call(lead, api.PushGroup, &api.PushGroupBody{Group: "ship", PR: true, Title: "Ship it", Draft: true}, &pushed)
	if pushed.PR != gh.URL || !pushed.UpToDate || pushed.Base != base {
		t.Errorf("PushGroup with pr answered %+v", pushed)
	}
	if got := gh.Ran(t); !slices.Contains(got, "--head=krad/ship") || !slices.Contains(got, "--base="+base) ||
		!slices.Contains(got, "--title=Ship it") || !slices.Contains(got, "--draft") {
		t.Errorf("gh ran with %q", got)
	}
	if where := gh.Where(); where != dir {
		t.Errorf("gh ran in %s, want the group's checkout on the host, %s", where, dir)
	}

	// No gh on the host: unavailable, and nothing pushed.
	if err := os.Remove(filepath.Join(gh.Dir, "gh")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.txt"), []byte("shipped twice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitHost(t, dir, "commit", "-q", "-am", "again")
	e := w.callErr(lead, api.PushGroup, &api.PushGroupBody{Group: "ship", PR: true})
	if e == nil || e.Code != api.CodeUnavailable || !strings.Contains(e.Message, worktree.GHInstallHint) {
		t.Errorf("PushGroup with pr, no gh on the host: %v, want unavailable with the hint", e)
	}
	if got := git(t, bare, "rev-parse", "refs/heads/krad/ship"); got != tip {
		t.Errorf("the server has krad/ship at %s after a refused pr, want it still at %s", got, tip)
	}

	// The person's push, the UI's p.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pushed, err := w.app.PushGroup(ctx, worker.ID(), false)
	if err != nil || pushed.Commit != gitHost(t, repo, "rev-parse", "krad/ship") {
		t.Errorf("the person's PushGroup: %+v, %v", pushed, err)
	}
	if got := git(t, bare, "rev-parse", "refs/heads/krad/ship"); got != pushed.Commit {
		t.Errorf("the server has krad/ship at %s after the person's push, want %s", got, pushed.Commit)
	}
	if found := leaktest.Processes(t, password); len(found) > 0 {
		t.Errorf("the password is in %s", found)
	}
	if found := leaktest.Files(t, password, start, w.sshd.Home, w.tmpdir); len(found) > 0 {
		t.Errorf("the password is in %s", found)
	}
}
