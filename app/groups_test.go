package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/app"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/worktree"
)

// gitIn runs git in dir, as a person would, and returns what it printed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// withRepo makes a git repository with one commit as the local environment's folder, and a
// worktrees root beside it.
func withRepo(t *testing.T) (repo, root string, o option) {
	testbin.Need(t, "git", "git")
	base := t.TempDir()
	repo, root = filepath.Join(base, "app"), filepath.Join(base, "worktrees")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "retry.go"), []byte("package retry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "first")
	return repo, root, func(c *app.Config) { c.Dir, c.WorktreeRoot = repo, root }
}

func (h *harness) decode(c *api.Client, name api.Name, body any, answer api.AnswerName, v any) error {
	h.t.Helper()
	a, err := h.call(c, name, body)
	if err != nil {
		return err
	}
	return a.Decode(answer, v)
}

// TestGroupLifecycle is the walk-through, through the bus against real git and tmux: a lead
// makes a group, spawns a worker in it, which starts in the group's checkout with its variables;
// the worker's List is its group; Changes is a patch git applies; a Client may not read it; the
// group retires when its last terminal closes, keeping the worker's uncommitted work, and
// subscribers hear what was kept.
func TestGroupLifecycle(t *testing.T) {
	t.Parallel()
	repo, root, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)

	var g worktree.Group
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "fix-retry"}, api.AnswerWorktree, &g); err != nil {
		t.Fatalf("CreateWorktree: %v", err)
	}
	if g.Branch != "krad/fix-retry" || !strings.HasPrefix(g.Dir, root+"/") || g.BaseCommit != gitIn(t, repo, "rev-parse", "HEAD") || g.Port != worktree.FirstPort {
		t.Errorf("CreateWorktree answered %+v", g)
	}
	// Never silent: the same name again is a conflict, and nothing is touched.
	if _, err := h.call(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "fix-retry"}); code(err) != api.CodeConflict {
		t.Errorf("CreateWorktree of an existing group: %v, want conflict", err)
	}
	// A Client may not make groups nor read a patch.
	if _, err := h.call(h.as(0), api.Changes, &api.ChangesBody{}); code(err) != api.CodeForbidden {
		t.Errorf("Changes as a Client: %v, want forbidden", err)
	}
	if _, err := h.call(h.as(0), api.CreateWorktree, &api.CreateWorktreeBody{}); code(err) != api.CodeForbidden {
		t.Errorf("CreateWorktree as a Client: %v, want forbidden", err)
	}

	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "fixer", Group: "fix-retry", Command: []string{"sh", "-c",
		`echo "DIR=$(pwd -P) G=$KRAD_ADE_GROUP P=$KRAD_ADE_PORT"; printf 'package retry\n\nfunc Retry() {}\n' > retry.go; echo new > notes.txt; printf x > "$(printf 'caf\351.txt')"; krad list --json; echo listed; sleep 60`}})
	if w.Group != "fix-retry" {
		t.Errorf("Spawn answered %+v, want group fix-retry", w)
	}
	screen := h.waitScreen(c, w.Terminal, "listed")
	if want := "DIR=" + g.Dir + " G=fix-retry P=20000"; !strings.Contains(screen, want) {
		t.Errorf("the worker's screen lacks %q:\n%s", want, screen)
	}
	// The worker's List is its own group: itself, not the lead.
	if !strings.Contains(screen, `"group":"fix-retry"`) || strings.Contains(screen, `"title":"lead"`) {
		t.Errorf("the worker's krad list shows other than its group:\n%s", screen)
	}

	var ch worktree.Changes
	if err := h.decode(c, api.Changes, &api.ChangesBody{Target: ptr(api.Target(w.Terminal))}, api.AnswerChanges, &ch); err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if ch.Group != "fix-retry" || len(ch.Files) != 3 || ch.Base != g.BaseCommit {
		t.Errorf("Changes answered group %q base %s files %+v", ch.Group, ch.Base, ch.Files)
	}
	// A name that is not UTF-8 comes through the bus's JSON exact.
	exact := false
	for _, f := range ch.Files {
		exact = exact || f.Path == "caf\xe9.txt"
	}
	if !exact {
		t.Errorf("no file caf\\xe9.txt, byte for byte, in %+v", ch.Files)
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(patch, []byte(ch.Patch), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "apply", "--check", patch)

	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil {
		t.Fatalf("Groups: %v", err)
	}
	if len(l.Groups) != 1 || l.Groups[0].Name != "fix-retry" || l.Top != repo {
		t.Errorf("Groups answered %+v", l)
	}

	// The last terminal of the group closes: the group retires, and says so.
	events := subscribe(t, h)
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Errorf("after Close, the group's checkout is still there (%v)", err)
	}
	snap := gitIn(t, repo, "rev-parse", "--verify", worktree.SnapshotPrefix+"fix-retry")
	if got := gitIn(t, repo, "show", snap+":notes.txt"); got != "new" {
		t.Errorf("the snapshot holds notes.txt as %q, want the worker's new", got)
	}
	gitIn(t, repo, "rev-parse", "--verify", "refs/heads/krad/fix-retry") // kept: the snapshot is on it
	ev := events.wait(t, api.GroupRetired)
	if !strings.Contains(ev.Message, "group fix-retry retired") || !strings.Contains(ev.Message, "refs/krad/snapshots/fix-retry") {
		t.Errorf("the AppEvent says %q", ev.Message)
	}
	if st := gitIn(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the main checkout was touched:\n%s", st)
	}
}

func ptr[T any](v T) *T { return &v }

// TestGroupsSurviveARestart: groups are git's own data, and a terminal's group is in its window:
// an app restarted while a group's worker runs finds both again, and retires the group when that
// worker closes.
func TestGroupsSurviveARestart(t *testing.T) {
	t.Parallel()
	_, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "worker", Group: "keep-me", Command: []string{"sh", "-c", "echo ready; sleep 120"}})
	h.waitScreen(c, w.Terminal, "ready")
	h.stop()
	h.start(testbin.Dir(t), lead(), withRepo)
	c = h.as(1) // the new run's token

	var found bool
	for _, a := range h.agents(h.as(0)) {
		if a.Terminal == w.Terminal {
			found = a.Group == "keep-me"
		}
	}
	if !found {
		t.Fatalf("after the restart, %d is not listed in group keep-me: %+v", w.Terminal, h.agents(h.as(0)))
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 {
		t.Fatalf("after the restart, Groups: %+v, %v", l, err)
	}
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 0 || len(l.Kept) != 0 {
		t.Errorf("after its last terminal closed, Groups: %+v, %v; want no group, and nothing kept of one that held nothing", l, err)
	}
}

// TestGroupRetiredAfterARestart: a group whose last terminal closed while the app was stopped
// retires at the next start, its work kept as a snapshot, as if the app had seen the terminal
// close; a group made by CreateWorktree that no terminal joined yet stays, waiting for its first
// worker.
func TestGroupRetiredAfterARestart(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "worker", Group: "g1", Command: []string{"sh", "-c", "echo work > notes.txt; echo wrote; sleep 120"}})
	h.waitScreen(c, w.Terminal, "wrote")
	var g2 worktree.Group
	if err := h.decode(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "g2"}, api.AnswerWorktree, &g2); err != nil {
		t.Fatalf("CreateWorktree: %v", err)
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 2 {
		t.Fatalf("Groups: %+v, %v", l, err)
	}
	joined := map[string]bool{}
	for _, g := range l.Groups {
		joined[g.Name] = g.Joined
	}
	if !joined["g1"] || joined["g2"] {
		t.Errorf("Groups says joined %v, want g1 joined (its worker) and g2 not", joined)
	}
	g1 := l.Groups[0]
	if g1.Name != "g1" {
		g1 = l.Groups[1]
	}

	// The app stops; the worker's window closes meanwhile; the app starts again.
	window := h.window(w.Terminal)
	h.stop()
	if out, err := exec.Command("tmux", "-S", h.socket, "kill-window", "-t", window).CombinedOutput(); err != nil {
		t.Fatalf("tmux kill-window: %v: %s", err, out)
	}
	h.start(testbin.Dir(t), lead(), withRepo)
	c = h.as(1)

	waitFor(t, 30*time.Second, "g1 to retire", func() bool {
		l = worktree.List{}
		return h.decode(c, api.Groups, nil, api.AnswerGroups, &l) == nil && len(l.Groups) == 1
	})
	if l.Groups[0].Name != "g2" || l.Groups[0].Dir != g2.Dir {
		t.Errorf("after the restart, Groups lists %+v, want g2 alone", l.Groups)
	}
	if _, err := os.Stat(g2.Dir); err != nil {
		t.Errorf("g2's checkout: %v", err)
	}
	if _, err := os.Stat(g1.Dir); !os.IsNotExist(err) {
		t.Errorf("g1's checkout is still there (%v)", err)
	}
	if len(l.Kept) != 1 || l.Kept[0].Name != "g1" || l.Kept[0].Branch != "krad/g1" || l.Kept[0].Snapshot != worktree.SnapshotPrefix+"g1" {
		t.Fatalf("after the restart, Groups keeps %+v, want g1's branch and snapshot", l.Kept)
	}
	if got := gitIn(t, repo, "show", l.Kept[0].SnapshotCommit+":notes.txt"); got != "work" {
		t.Errorf("g1's snapshot holds notes.txt as %q, want the worker's work", got)
	}
}

// TestGroupNotRetiredSaysWhy: when git cannot remove the checkout of a group whose last terminal
// closed, the group stays with its work, and a group_not_retired AppEvent names its folder; the
// next start of the app, with git working again, retires it.
func TestGroupNotRetiredSaysWhy(t *testing.T) {
	repo, _, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "worker", Group: "stuck", Command: []string{"sh", "-c", "echo work > notes.txt; echo wrote; sleep 120"}})
	h.waitScreen(c, w.Terminal, "wrote")
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 1 {
		t.Fatalf("Groups: %+v, %v", l, err)
	}
	dir := l.Groups[0].Dir

	events := subscribe(t, h)
	path := os.Getenv("PATH")
	t.Setenv("PATH", testbin.FailingGit(t, "remove")+string(os.PathListSeparator)+path) // git worktree remove fails
	if _, err := h.call(c, api.Close, &api.CloseBody{Target: api.Target(w.Terminal)}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ev := events.wait(t, api.GroupNotRetired)
	if ev.Environment != "main" || !strings.Contains(ev.Message, "group stuck") || !strings.Contains(ev.Message, dir) || !strings.Contains(ev.Message, "injected failure") {
		t.Errorf("the AppEvent says %+v; want group stuck, its folder %s and git's error", ev, dir)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(data) != "work\n" {
		t.Errorf("the worker's notes.txt: %q, %v; want its work, in place", data, err)
	}
	if out := gitIn(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(out, "locked krad-ade group stuck") {
		t.Errorf("the checkout is no longer locked:\n%s", out)
	}

	t.Setenv("PATH", path)
	h.stop()
	h.start(testbin.Dir(t), lead(), withRepo)
	waitFor(t, 30*time.Second, "stuck to retire at the next start", func() bool {
		l = worktree.List{}
		return h.decode(h.as(1), api.Groups, nil, api.AnswerGroups, &l) == nil && len(l.Groups) == 0
	})
	if len(l.Kept) != 1 || l.Kept[0].Snapshot == "" {
		t.Errorf("after the retire, Groups keeps %+v, want stuck's snapshot", l.Kept)
	} else if got := gitIn(t, repo, "show", l.Kept[0].SnapshotCommit+":notes.txt"); got != "work" {
		t.Errorf("the snapshot holds notes.txt as %q", got)
	}
}

// TestGroupsNeedARepository: an environment whose folder is in no repository answers
// unavailable, with what to do, and opens no terminal.
func TestGroupsNeedARepository(t *testing.T) {
	t.Parallel()
	testbin.Need(t, "git", "git")
	dir := t.TempDir()
	h := start(t, lead(), func(c *app.Config) { c.Dir, c.WorktreeRoot = dir, filepath.Join(dir, "wt") })
	c := h.as(1)
	_, err := h.call(c, api.Spawn, &api.SpawnBody{Title: "x", Group: "g", Command: []string{"sleep", "60"}})
	if code(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "git init") {
		t.Errorf("Spawn into a group outside a repository: %v, want unavailable saying git init", err)
	}
	if n := len(h.agents(h.as(0))); n != 1 {
		t.Errorf("%d terminals after the refused Spawn, want the lead alone", n)
	}
}

// events collects a subscription's AppEvents.
type events struct {
	mu  sync.Mutex
	got []api.AppEvent
}

func subscribe(t *testing.T, h *harness) *events {
	t.Helper()
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	go func() {
		first := true
		_ = h.as(0).Subscribe(ctx, api.NewRequest(api.SubscribeAgents, nil), func(a api.Answer) error {
			if first {
				first = false
				close(ready)
			}
			if a.Name == api.AnswerAppEvent {
				var e api.AppEvent
				if json.Unmarshal(a.Body, &e) == nil {
					ev.mu.Lock()
					ev.got = append(ev.got, e)
					ev.mu.Unlock()
				}
			}
			return nil
		})
	}()
	t.Cleanup(cancel)
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not start")
	}
	return ev
}

// wait waits for an AppEvent of kind.
func (ev *events) wait(t *testing.T, kind string) api.AppEvent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ev.mu.Lock()
		for _, e := range ev.got {
			if e.Kind == kind {
				ev.mu.Unlock()
				return e
			}
		}
		ev.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no AppEvent %s came", kind)
	return api.AppEvent{}
}

// TestGroupsFromTheCLI is the example typed in a lead's terminal: krad worktree create,
// krad spawn --group, krad changes --stat, krad changes piped into git apply --check, krad groups,
// krad close; then krad groups shows the branch and snapshot the retired group kept, and krad
// worktree create --branch continues them, the work back as uncommitted changes. What each
// printed is in a file the test reads.
func TestGroupsFromTheCLI(t *testing.T) {
	t.Parallel()
	repo, root, withRepo := withRepo(t)
	out := filepath.Join(t.TempDir(), "out")
	script := `exec >` + out + ` 2>&1
krad worktree create fix-retry; echo "create=$?"
krad worktree create fix-retry; echo "again=$?"
krad spawn --group fix-retry --title 'fix flaky test' -- sh -c 'printf "package retry\n// fixed\n" > retry.go; echo ok; sleep 60'; echo "spawn=$?"
until krad read 2 | grep -q ok; do sleep 0.1; done
krad changes 2 --stat; echo "stat=$?"
krad changes 2 | git apply --check && echo APPLIES
krad groups; echo "groups=$?"
krad close 2; echo "close=$?"
krad groups; echo "groups=$?"
krad worktree create fix-retry-2 --branch krad/fix-retry; echo "continue=$?"
echo END; sleep 60`
	start(t, withTerminals(app.TerminalSpec{Title: "lead", Lead: true, Command: script}), withRepo)
	text := scriptOutput(out, 60*time.Second)
	base := gitIn(t, repo, "rev-parse", "--short=7", "HEAD")
	snap := gitIn(t, repo, "rev-parse", "--short=7", worktree.SnapshotPrefix+"fix-retry")
	for _, want := range []string{
		"main:fix-retry  krad/fix-retry  from " + base + "  ",
		"create=0",
		"krad: error: CreateWorktree: the app answered conflict: group fix-retry exists",
		"again=1",
		"main:2 worker 'fix flaky test'",
		" retry.go | 1 +\n 1 file changed, 1 insertion(+), 0 deletions(-)\nstat=0",
		"APPLIES",
		"GROUP      BRANCH          BASE",
		"fix-retry  krad/fix-retry  ",
		"close=0",
		// What the retired group kept: its branch (at its base: the work was uncommitted), and
		// the snapshot of that work.
		"no groups in " + repo + "\n\nkept by retired groups:\nGROUP      BRANCH                    SNAPSHOT\n" +
			"fix-retry  krad/fix-retry (" + base + ")  refs/krad/snapshots/fix-retry (" + snap + ")\ngroups=0",
		"main:fix-retry-2  krad/fix-retry  from " + base + "  ",
		"  (uncommitted work restored from " + snap + ")\ncontinue=0",
		"END",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the lead's output lacks %q:\n%s", want, text)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("the lead's output:\n%s", text)
	}
	// The continued group's checkout has the work back, uncommitted, as git status shows it.
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "fix-retry-2"))
	if len(dirs) != 1 {
		t.Fatalf("the continued group's checkout: %q, want one under %s", dirs, root)
	}
	dir := dirs[0]
	if st := gitIn(t, dir, "status", "--porcelain"); st != "M retry.go" {
		t.Errorf("git status in the continued group: %q, want retry.go modified", st)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "retry.go")); err != nil || string(data) != "package retry\n// fixed\n" {
		t.Errorf("retry.go in the continued group: %q, %v; want the worker's fix", data, err)
	}
}

// TestGroupFlagsFromTheCLI: the flags of krad worktree create, krad changes and krad groups,
// typed in a lead's terminal against the real app, each command's stdout, stderr and exit code in
// files of their own, checked as a person would: --base and --branch make the group they say,
// --json prints the answer; a patch that is not UTF-8 is printed byte for byte, with the files
// left out of it named on stderr; --binary puts them in, in a form git apply takes; --paths
// narrows the patch; bad input exits with the README's codes and a hint.
func TestGroupFlagsFromTheCLI(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	first := gitIn(t, repo, "rev-parse", "HEAD")
	gitIn(t, repo, "branch", "keep") // an existing branch to continue, at the first commit
	if err := os.WriteFile(filepath.Join(repo, "second.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-q", "-m", "second")
	o := t.TempDir()
	script := `o=` + o + `; exec >$o/out 2>&1
krad worktree create flags --base HEAD~1 --json >$o/create.json 2>$o/create.err; echo "create=$?"
krad worktree create cont --branch keep >$o/cont.out 2>$o/cont.err; echo "cont=$?"
krad worktree create nope --base no-such-ref >$o/nope.out 2>$o/nope.err; echo "nope=$?"
krad spawn --group flags --title w -- sh -c 'printf "caf\351\n" > latin1.txt; printf "\0\1\2bin" > blob.bin; printf "package retry\n// more\n" > retry.go; echo ok; sleep 60' >/dev/null; echo "spawn=$?"
until krad read 2 | grep -q ok; do sleep 0.1; done
krad changes --group flags >$o/patch 2>$o/patch.err; echo "patch=$?"
krad changes --group flags --binary >$o/binary 2>$o/binary.err; echo "binary=$?"
krad changes --group flags --paths retry.go >$o/paths 2>$o/paths.err; echo "paths=$?"
krad changes --group flags --json >$o/changes.json 2>$o/changes.err; echo "json=$?"
krad changes --group nosuch >$o/nosuch.out 2>$o/nosuch.err; echo "nosuch=$?"
krad changes --group Bad/Name >$o/badname.out 2>$o/badname.err; echo "badname=$?"
krad groups --json >$o/groups.json 2>$o/groups.err; echo "groups=$?"
echo END; sleep 60`
	h := start(t, withTerminals(app.TerminalSpec{Title: "lead", Lead: true, Command: script}), withRepo)
	text := scriptOutput(filepath.Join(o, "out"), 60*time.Second)
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(o, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return string(b)
	}
	for _, want := range []string{"create=0", "cont=0", "nope=1", "spawn=0", "patch=0", "binary=0", "paths=0", "json=0", "nosuch=1", "badname=5", "groups=0", "END"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the exit codes lack %s:\n%s", want, text)
		}
	}
	for _, name := range []string{"create.err", "cont.err", "binary.err", "paths.err", "changes.err", "groups.err", "nope.out", "nosuch.out", "badname.out"} {
		if got := file(name); got != "" {
			t.Errorf("%s is %q, want nothing", name, got)
		}
	}

	// worktree create --base --json: one JSON object, the group from the commit named.
	var g worktree.Group
	if err := json.Unmarshal([]byte(file("create.json")), &g); err != nil || g.Name != "flags" || g.Branch != "krad/flags" || g.BaseCommit != first || !g.MadeBranch || !strings.HasSuffix(file("create.json"), "}\n") {
		t.Errorf("worktree create --base HEAD~1 --json printed %q (%v); want group flags from %s", file("create.json"), err, first)
	}
	// --branch: the existing branch continued, from where it meets HEAD.
	if got, want := file("cont.out"), "main:cont  keep  from "+first[:7]+"  "; !strings.HasPrefix(got, want) {
		t.Errorf("worktree create --branch keep printed %q, want it to start %q", got, want)
	}
	if got := file("nope.err"); got != "krad: error: CreateWorktree: the app answered not_found: base no-such-ref is no commit of the repository\nkrad: hint: --base and --branch take what git names: git branch lists the branches, git log --oneline the commits; krad groups the branches retired groups kept\n" {
		t.Errorf("a base that does not exist: stderr %q", got)
	}

	// The patch, byte for byte as the app has it (Changes through the bus), not UTF-8.
	var want worktree.Changes
	if err := h.decode(h.as(1), api.Changes, &api.ChangesBody{Group: ptr("flags")}, api.AnswerChanges, &want); err != nil {
		t.Fatal(err)
	}
	patch := file("patch")
	if patch != want.Patch || !strings.Contains(patch, "+caf\xe9\n") || strings.Contains(patch, "GIT binary patch") {
		t.Errorf("krad changes --group flags printed %q, want the app's patch %q, with caf\\xe9 and no binary", patch, want.Patch)
	}
	if got := file("patch.err"); got != "krad: warning: 1 file is not in the patch: blob.bin (binary); ask for them with --paths (and --binary for binary files), or see them all with --stat\n" {
		t.Errorf("krad changes's stderr: %q, want blob.bin named as left out", got)
	}
	gitIn(t, repo, "apply", "--check", filepath.Join(o, "patch")) // the base's files are the main checkout's
	// --binary: blob.bin too, as a git binary patch, and nothing left out.
	binary := file("binary")
	if !strings.Contains(binary, "GIT binary patch") || !strings.Contains(binary, "+caf\xe9\n") || file("binary.err") != "" {
		t.Errorf("krad changes --binary printed %q", binary)
	}
	gitIn(t, repo, "apply", "--check", filepath.Join(o, "binary"))
	// --paths: that file's patch alone.
	if got := file("paths"); !strings.HasPrefix(got, "diff --git a/retry.go b/retry.go\n") || strings.Count(got, "diff --git") != 1 {
		t.Errorf("krad changes --paths retry.go printed %q", got)
	}
	// --json: the whole answer, the patch exact (in patch_base64: it is not UTF-8).
	var c worktree.Changes
	raw := file("changes.json")
	if err := json.Unmarshal([]byte(raw), &c); err != nil || c.Group != "flags" || c.Base != first || c.Patch != want.Patch || len(c.Files) != 3 || !strings.Contains(raw, `"patch_base64":`) {
		t.Errorf("krad changes --json printed %q (%v)", raw, err)
	}
	if got := file("nosuch.err"); !strings.HasPrefix(got, "krad: error: Changes: the app answered not_found: no group nosuch in ") {
		t.Errorf("krad changes --group nosuch: stderr %q", got)
	}
	if got := file("badname.err"); !strings.HasPrefix(got, "krad: error: ") || !strings.Contains(got, "\nkrad: hint: run 'krad changes --help'\n") {
		t.Errorf("krad changes --group Bad/Name: stderr %q, want a usage error with its hint", got)
	} else {
		t.Logf("krad changes --group Bad/Name: %s", got)
	}

	// groups --json: {"top","groups","kept"}, both groups, nothing kept.
	var l worktree.List
	if err := json.Unmarshal([]byte(file("groups.json")), &l); err != nil || l.Top != repo || len(l.Groups) != 2 || l.Kept == nil || len(l.Kept) != 0 {
		t.Errorf("krad groups --json printed %q (%v)", file("groups.json"), err)
	}
	names := map[string]string{}
	for _, g := range l.Groups {
		names[g.Name] = g.Branch
	}
	if names["flags"] != "krad/flags" || names["cont"] != "keep" {
		t.Errorf("krad groups --json lists %v, want flags on krad/flags and cont on keep", names)
	}
	if t.Failed() {
		t.Logf("the lead's output:\n%s", text)
	}
}

// TestAgentProfiles: Spawn {agent} runs the profile's command, with the prompt typed in or, for
// a profile that takes it so, as one argument the shell never parses; an unknown name is
// bad_request with the names there are.
func TestAgentProfiles(t *testing.T) {
	t.Parallel()
	h := start(t, lead(), func(c *app.Config) {
		c.Agents = []app.AgentProfile{
			{Name: "typist", Command: `echo typist-ready; read -r p; echo "typed:$p"; sleep 60`},
			{Name: "arger", Command: `printf 'arg:%s|\n'`, PromptArg: true},
		}
	})
	c := h.as(1)
	w := h.agent(c, api.Spawn, &api.SpawnBody{Agent: "typist", Prompt: "fix it"})
	if w.Title != "typist" {
		t.Errorf("an agent's worker is titled %q, want its name", w.Title)
	}
	h.waitScreen(c, w.Terminal, "typed:fix it")
	// $(…) in the prompt stays text: it is an argument, not shell code.
	w = h.agent(c, api.Spawn, &api.SpawnBody{Agent: "arger", Prompt: "a b; $(echo pwned)"})
	if screen := h.waitScreen(c, w.Terminal, "arg:"); !strings.Contains(screen, "arg:a b; $(echo pwned)|") {
		t.Errorf("the prompt did not arrive as one argument, as it was:\n%s", screen)
	}
	_, err := h.call(c, api.Spawn, &api.SpawnBody{Agent: "nope"})
	if code(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "the agents are typist, arger") {
		t.Errorf("Spawn of an unknown agent: %v, want bad_request naming the agents", err)
	}
}

// TestWaitSeveral: krad wait on several workers, typed in a lead's terminal: --all prints each as
// it settles and exits 1 when one failed; --any returns at the first; one that keeps working
// past the timeout is exit 4. The workers say they are working (krad report), so that they are
// working until they exit however busy the machine is: a quiet spell's idle is not what this
// tests (a loaded machine once kept a printing worker's output from the app for its 2 s).
func TestWaitSeveral(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	script := `exec >` + out + ` 2>&1
busy='krad report working || exit 9; i=0; while [ $i -lt $1 ]; do echo $i; i=$((i+1)); sleep 0.1; done; exit $2'
krad spawn --title quick -- sh -c "$busy" sh 10 0 >/dev/null
krad spawn --title slow -- sh -c "$busy" sh 30 3 >/dev/null
krad spawn --title long -- sh -c "$busy" sh 600 0 >/dev/null
krad wait 2 3; echo "all=$?"
krad wait 2 4 --any --timeout 5s; echo "any=$?"
krad wait 4 2 --timeout 2s; echo "timeout=$?"
echo END; sleep 60`
	start(t, withTerminals(app.TerminalSpec{Title: "lead", Lead: true, Command: script}))
	text := scriptOutput(out, 60*time.Second)
	for _, want := range []string{
		"main:2 worker 'quick' done (0)\nmain:3 worker 'slow' failed (3)\nkrad: error: main:3 failed (exit code 3)\n",
		"all=1",
		"main:2 worker 'quick' done (0)\nany=0",
		"main:2 worker 'quick' done (0)\nkrad: error: terminal 4 did not settle within 2s",
		"timeout=4",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the lead's output lacks %q:\n%s", want, text)
		}
	}
}

// TestVariantsFromTheCLI: a lead runs a task three ways, waits for them, compares them, and
// picks one, typed in its terminal against a real repository: the winner's work is one commit on
// main, the others are closed and their groups retired with their work kept.
func TestVariantsFromTheCLI(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	gitIn(t, repo, "config", "user.name", "Pat")
	gitIn(t, repo, "config", "user.email", "pat@example.com")
	base := gitIn(t, repo, "rev-parse", "--short=7", "HEAD")
	out := filepath.Join(t.TempDir(), "out")
	script := `exec >` + out + ` 2>&1
krad variants run --title 'Retry backoff' --prompt 'make it pass' --count 3 -- sh -c 'read -r task; echo "$task by $KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.txt"; echo wrote'; echo "run=$?"
krad wait 2 3 4 >/dev/null; echo "wait=$?"
krad variants pick retry-backoff-1 --how bogus; echo "bad=$?"
krad variants show retry-backoff; echo "show=$?"
krad variants pick retry-backoff-2 --message 'retry: backoff'; echo "pick=$?"
krad variants pick retry-backoff-2; echo "again=$?"
echo END; sleep 60`
	start(t, withTerminals(app.TerminalSpec{Title: "lead", Lead: true, Command: script}), withRepo)
	text := scriptOutput(out, 90*time.Second)
	for _, want := range []string{
		"set retry-backoff: 3 workers from " + base + " (main:2..main:4)\nrun=0",
		"wait=0",
		"bad=5",
		"retry-backoff-1  main:2",
		"retry-backoff-2  main:3",
		"show=0",
		"picked retry-backoff-2 (squash → ",
		"closed 2 other terminals",
		"pick=0",
		"again=1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the lead's output lacks %q", want)
		}
	}
	if got := gitIn(t, repo, "log", "-1", "--format=%s"); got != "retry: backoff" {
		t.Errorf("main's last commit is %q", got)
	}
	if got := gitIn(t, repo, "show", "HEAD:retry-backoff-2.txt"); got != "make it pass by retry-backoff-2" {
		t.Errorf("the picked file holds %q", got)
	}
	for _, loser := range []string{"retry-backoff-1", "retry-backoff-3"} {
		snap := gitIn(t, repo, "rev-parse", worktree.SnapshotPrefix+loser)
		if got := gitIn(t, repo, "show", snap+":"+loser+".txt"); !strings.HasSuffix(got, loser) {
			t.Errorf("the loser %s's work is not kept: %q", loser, got)
		}
	}
	if t.Failed() {
		t.Logf("the lead's output:\n%s", text)
	}
}

// TestVariantFaults: a pick while the winner works is a conflict; another lead's pick is
// forbidden, and a pick of a group of no set is bad_request, each changing nothing; 9 variants
// are refused; an unknown agent is refused before any group is made; the app restarted between
// run and pick finds the set again, and the pick's AppEvent says what was picked, closed and
// kept.
func TestVariantFaults(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	gitIn(t, repo, "config", "user.name", "Pat")
	gitIn(t, repo, "config", "user.email", "pat@example.com")
	leads := withTerminals(app.TerminalSpec{Title: "lead", Lead: true}, app.TerminalSpec{Title: "other", Lead: true})
	h := start(t, leads, withRepo)
	c, other := h.as(1), h.as(2)

	nine := &api.RunVariantsBody{Title: "x", Agents: []api.VariantAgent{{Command: []string{"true"}, Count: 9}}}
	if _, err := h.call(c, api.RunVariants, nine); code(err) != api.CodeBadRequest {
		t.Errorf("9 variants: %v, want bad_request", err)
	}
	unknown := &api.RunVariantsBody{Title: "x", Agents: []api.VariantAgent{{Agent: "nope", Count: 2}}}
	if _, err := h.call(c, api.RunVariants, unknown); code(err) != api.CodeBadRequest {
		t.Errorf("an unknown agent: %v, want bad_request", err)
	}
	if refs := gitIn(t, repo, "for-each-ref", "refs/heads/krad/"); refs != "" {
		t.Errorf("refused sets left branches: %s", refs)
	}

	// Workers that write a file, then keep printing until told to stop (a line typed in).
	busy := []string{"bash", "-c", `echo "$KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.txt"; while ! read -t 0.1 -r x; do echo tick; done; echo stopped`}
	run := &api.RunVariantsBody{Title: "race", Agents: []api.VariantAgent{{Command: busy, Count: 2}}}
	var v api.Variants
	if err := h.decode(c, api.RunVariants, run, api.AnswerVariants, &v); err != nil {
		t.Fatalf("RunVariants: %v", err)
	}
	if len(v.Variants) != 2 || v.Set != "race" {
		t.Fatalf("RunVariants answered %+v", v)
	}
	win := v.Variants[1]
	if _, err := h.call(c, api.PickVariant, &api.PickVariantBody{Group: win.Group}); code(err) != api.CodeConflict || !strings.Contains(err.Error(), "wait for it first") {
		t.Errorf("a pick while the winner works: %v, want conflict", err)
	}
	// A lead picks within its own sets only; a plain group is no variant. Neither changes a
	// thing: no ref, no checkout, no terminal.
	if _, err := h.call(c, api.CreateWorktree, &api.CreateWorktreeBody{Name: "plain"}); err != nil {
		t.Fatalf("CreateWorktree: %v", err)
	}
	refs := gitIn(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
	wts := gitIn(t, repo, "worktree", "list", "--porcelain")
	agents := len(h.agents(h.as(0)))
	_, err := h.call(other, api.PickVariant, &api.PickVariantBody{Group: win.Group})
	if code(err) != api.CodeForbidden || !strings.Contains(err.Error(), "which main:1 ran, not this lead") {
		t.Errorf("another lead's pick: %v, want forbidden naming the set's lead", err)
	}
	_, err = h.call(c, api.PickVariant, &api.PickVariantBody{Group: "plain"})
	if code(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "group plain is of no variant set") {
		t.Errorf("a pick of a group of no set: %v, want bad_request saying so", err)
	}
	if gitIn(t, repo, "for-each-ref", "--format=%(refname) %(objectname)") != refs || gitIn(t, repo, "worktree", "list", "--porcelain") != wts ||
		len(h.agents(h.as(0))) != agents || gitIn(t, repo, "status", "--porcelain") != "" {
		t.Error("a refused pick changed refs, worktrees, terminals or the main checkout")
	}

	// The app restarts between run and pick; the set and its workers are found again.
	h.stop()
	h.start(testbin.Dir(t), leads, withRepo)
	c = h.as(1)
	if _, err := h.call(c, api.Send, &api.SendBody{Target: api.Target(win.Agent.Terminal), Text: "stop"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(win.Agent.Terminal), TimeoutSecs: secs(30)}); !api.Settled(got.State) {
		t.Fatalf("the winner is %s after it was stopped", got.State)
	}
	events := subscribe(t, h)
	var p api.Picked
	if err := h.decode(c, api.PickVariant, &api.PickVariantBody{Group: win.Group, How: api.PickSquash}, api.AnswerPicked, &p); err != nil {
		t.Fatalf("PickVariant after a restart: %v", err)
	}
	loser := v.Variants[0]
	if len(p.Closed) != 1 || p.Closed[0] != fmt.Sprintf("main:%d", loser.Agent.Terminal) {
		t.Errorf("the pick closed %v, want the other variant's terminal", p.Closed)
	}
	if got := gitIn(t, repo, "show", "HEAD:"+win.Group+".txt"); got != win.Group {
		t.Errorf("main holds %q of the winner's file", got)
	}
	// The AppEvent: the winner, how and into what; the terminal closed; what the loser kept.
	ev := events.wait(t, api.VariantPicked)
	want := fmt.Sprintf("variant %s of set race picked (squash → %s on main); closed main:%d; kept %s on krad/%s and refs/krad/snapshots/%s",
		win.Group, p.Commit[:12], loser.Agent.Terminal, loser.Group, loser.Group, loser.Group)
	if ev.Message != want || ev.Environment != "main" {
		t.Errorf("the variant_picked AppEvent says %q in %q, want %q", ev.Message, ev.Environment, want)
	}
	if got := gitIn(t, repo, "show", worktree.SnapshotPrefix+loser.Group+":"+loser.Group+".txt"); got != loser.Group {
		t.Errorf("the loser's snapshot holds %q", got)
	}
}

// TestVariantRunFaults: a variant whose agent's command does not exist shows failed while the
// others run; of two picks of one set at once, one wins and the other is a conflict.
func TestVariantRunFaults(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	gitIn(t, repo, "config", "user.name", "Pat")
	gitIn(t, repo, "config", "user.email", "pat@example.com")
	h := start(t, lead(), withRepo, func(c *app.Config) {
		c.Agents = []app.AgentProfile{
			{Name: "ghost", Command: "no-such-agent-krad-test"},
			{Name: "real", Command: `echo "$KRAD_ADE_GROUP" > "$KRAD_ADE_GROUP.txt"; echo ok`},
		}
	})
	c := h.as(1)
	var v api.Variants
	body := &api.RunVariantsBody{Title: "mixed", Agents: []api.VariantAgent{{Agent: "ghost", Count: 1}, {Agent: "real", Count: 2}}}
	if err := h.decode(c, api.RunVariants, body, api.AnswerVariants, &v); err != nil {
		t.Fatalf("RunVariants: %v", err)
	}
	states := map[string]string{}
	for _, x := range v.Variants {
		got := h.agent(c, api.Wait, &api.WaitBody{Target: api.Target(x.Agent.Terminal), TimeoutSecs: secs(30)})
		states[x.Group] = string(got.State) + "/" + exitOf(got)
	}
	if states["mixed-1"] != "failed/127" || states["mixed-2"] != "done/0" || states["mixed-3"] != "done/0" {
		t.Errorf("the variants ended %v; want the ghost failed (127), the others done", states)
	}

	errs := make(chan error, 2)
	for _, g := range []string{"mixed-2", "mixed-3"} {
		go func() {
			_, err := h.call(c, api.PickVariant, &api.PickVariantBody{Group: g})
			errs <- err
		}()
	}
	var ok, conflicts int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case code(err) == api.CodeConflict:
			conflicts++
		default:
			t.Errorf("a pick: %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Errorf("two picks at once: %d won, %d conflicts; want one of each", ok, conflicts)
	}
}

// scriptOutput is what a lead's script wrote to the file out, once it has written END, or all it
// wrote within d.
func scriptOutput(out string, d time.Duration) string {
	var text string
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(out)
		if text = string(b); strings.Contains(text, "END") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return text
}

// TestVariantRunClientLeaves: a lead's client that leaves while RunVariants makes the set (git
// still adding its worktrees) leaves no half set: no worktree, branch, ref or folder of the set,
// and no worker; and the app goes on serving, the next RunVariants making the whole set.
func TestVariantRunClientLeaves(t *testing.T) {
	repo, root, withRepo := withRepo(t)
	slow := testbin.SlowGit(t)
	path := os.Getenv("PATH")
	t.Setenv("PATH", slow+string(os.PathListSeparator)+path)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	before := gitIn(t, repo, "for-each-ref", "--format=%(refname)")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, api.NewRequest(api.RunVariants, &api.RunVariantsBody{Title: "leaving",
			Agents: []api.VariantAgent{{Command: []string{"sh", "-c", "sleep 60"}, Count: 3}}}))
		done <- err
	}()
	waitFor(t, 30*time.Second, "git worktree add to start", func() bool {
		_, err := os.Stat(filepath.Join(slow, "waiting"))
		return err == nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("RunVariants answered although its client left")
	}
	t.Setenv("PATH", path) // git adds worktrees again

	// Nothing of the set is left, once the app has undone it.
	var wts, refs string
	settled := func() bool {
		wts = gitIn(t, repo, "worktree", "list", "--porcelain")
		refs = gitIn(t, repo, "for-each-ref", "--format=%(refname)")
		return strings.Count(wts, "worktree ") == 1 && refs == before
	}
	waitFor(t, 30*time.Second, "the set to be undone", settled)
	if entries, _ := os.ReadDir(root); len(entries) > 0 {
		var left []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if p != root {
				left = append(left, p)
			}
			return nil
		})
		// The repository's key folder may stay, empty; no group's folder may.
		for _, p := range left {
			if filepath.Dir(p) != root {
				t.Errorf("left under the worktrees root: %s", p)
			}
		}
	}
	for _, a := range h.agents(h.as(0)) {
		if a.Role == api.RoleWorker {
			t.Errorf("a worker is left: %+v", a)
		}
	}

	var v api.Variants
	if err := h.decode(c, api.RunVariants, &api.RunVariantsBody{Title: "staying",
		Agents: []api.VariantAgent{{Command: []string{"sh", "-c", "sleep 60"}, Count: 3}}}, api.AnswerVariants, &v); err != nil {
		t.Fatalf("RunVariants after the client left: %v", err)
	}
	if len(v.Variants) != 3 {
		t.Errorf("the next set has %d variants, want 3", len(v.Variants))
	}
}

// waitFor polls cond until it holds, or fails the test after d, naming what it waited for.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
	}
}

// TestVariantRunFolderTaken: a set whose third group's folder is taken is all or nothing in the
// app too: RunVariants answers conflict naming that folder, opens no terminal (the next one
// gets the number after the lead's), and leaves no group, branch, ref or folder.
func TestVariantRunFolderTaken(t *testing.T) {
	t.Parallel()
	repo, root, withRepo := withRepo(t)
	r, err := worktree.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(root, r.Key, "taken-3")
	if err := os.MkdirAll(taken, 0o700); err != nil {
		t.Fatal(err)
	}
	h := start(t, lead(), withRepo)
	c := h.as(1)
	refs := gitIn(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
	_, err = h.call(c, api.RunVariants, &api.RunVariantsBody{Title: "taken", Prompt: "go",
		Agents: []api.VariantAgent{{Command: []string{"sh", "-c", "echo started > started.txt; sleep 60"}, Count: 3}}})
	if code(err) != api.CodeConflict || !strings.Contains(err.Error(), "folder "+taken+" exists") {
		t.Errorf("RunVariants with the third folder taken: %v, want conflict naming %s", err, taken)
	}
	if got := gitIn(t, repo, "for-each-ref", "--format=%(refname) %(objectname)"); got != refs {
		t.Errorf("refs after the refused set:\n%s\nwere:\n%s", got, refs)
	}
	if wts := gitIn(t, repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("worktrees after the refused set:\n%s", wts)
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 0 || len(l.Kept) != 0 {
		t.Errorf("Groups after the refused set: %+v, %v; want none, and nothing kept", l, err)
	}
	left, _ := os.ReadDir(filepath.Join(root, r.Key))
	if len(left) != 1 || left[0].Name() != "taken-3" {
		t.Errorf("under the worktrees root: %v, want the taken folder alone", left)
	}
	if agents := h.agents(h.as(0)); len(agents) != 1 {
		t.Errorf("terminals after the refused set: %+v, want the lead alone", agents)
	}
	// No terminal was opened and closed meanwhile: the next one is the lead's next number.
	if w := h.agent(c, api.Spawn, &api.SpawnBody{Title: "next", Command: []string{"sleep", "60"}}); w.Terminal != 2 {
		t.Errorf("the next terminal is main:%d, want main:2: the refused set opened terminals", w.Terminal)
	}
}

// TestVariantRunClientLeavesAfterAWorker: a lead's client that leaves once the set's first
// worker has opened, while tmux makes the second's window (a tmux hook holds tmux there, after
// new-window), leaves no half set either: the opened worker is closed, the second's window too
// (never taken for one a person opened), and no worktree, branch, ref or folder of the set is
// left. The workers did no work, so their retiring keeps nothing.
func TestVariantRunClientLeavesAfterAWorker(t *testing.T) {
	t.Parallel()
	repo, root, withRepo := withRepo(t)
	h := start(t, lead(), withRepo)
	c := h.as(1)
	before := gitIn(t, repo, "for-each-ref", "--format=%(refname)")

	// After the second new-window of the set, tmux runs a gate that waits for the test.
	gate := t.TempDir()
	script := filepath.Join(gate, "gate.sh")
	if err := os.WriteFile(script, []byte(`d=$(dirname "$0"); n=$(cat "$d/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$d/count"
[ $n -eq 2 ] || exit 0
: > "$d/waiting"; i=0; while [ ! -e "$d/release" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
`), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tmux", "-S", h.socket, "set-hook", "-g", "after-new-window", "run-shell 'sh "+script+"'").CombinedOutput(); err != nil {
		t.Fatalf("tmux set-hook: %v %s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, api.NewRequest(api.RunVariants, &api.RunVariantsBody{Title: "leaving",
			Agents: []api.VariantAgent{{Command: []string{"sleep", "60"}, Count: 3}}}))
		done <- err
	}()
	waitFor(t, 30*time.Second, "the second worker's window", func() bool {
		_, err := os.Stat(filepath.Join(gate, "waiting"))
		return err == nil
	})
	// The first worker has opened (the app opens one at a time): its window is marked as its
	// terminal, and runs in its group's checkout.
	out, err := exec.Command("tmux", "-S", h.socket, "list-windows", "-a", "-F", "#{@krad_terminal} #{pane_current_path}").Output()
	if err != nil || !regexp.MustCompile(`(?m)^main:2 .*/leaving-1$`).Match(out) {
		t.Fatalf("when the second window is made, the first worker is not open: %q, %v", out, err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("RunVariants answered although its client left")
	}
	if err := os.WriteFile(filepath.Join(gate, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	var wts, refs, windows string
	undone := func() bool {
		wts = gitIn(t, repo, "worktree", "list", "--porcelain")
		refs = gitIn(t, repo, "for-each-ref", "--format=%(refname)")
		out, _ := exec.Command("tmux", "-S", h.socket, "list-windows", "-a", "-F", "#{window_id} #{@krad_terminal} #{pane_current_path}").Output()
		windows = strings.TrimSpace(string(out))
		return strings.Count(wts, "worktree ") == 1 && refs == before && strings.Count(windows, "\n") == 0
	}
	for deadline := time.Now().Add(30 * time.Second); !undone(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the client left, the set is not undone: worktrees\n%s\nrefs\n%s\nwindows\n%s", wts, refs, windows)
		}
	}
	// Settled: nothing comes back a moment later (a window numbered late, a group made late).
	time.Sleep(time.Second)
	if out, _ := exec.Command("tmux", "-S", h.socket, "list-windows", "-a", "-F", "#{window_id} #{@krad_terminal}").Output(); strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("windows left in tmux:\n%s", out)
	}
	for _, a := range h.agents(h.as(0)) {
		if a.Terminal != 1 {
			t.Errorf("a terminal is left: %+v", a)
		}
	}
	var left []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p != root && filepath.Dir(p) != root { // the repository's key folder may stay, empty
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left under the worktrees root: %q", left)
	}
	var l worktree.List
	if err := h.decode(c, api.Groups, nil, api.AnswerGroups, &l); err != nil || len(l.Groups) != 0 || len(l.Kept) != 0 {
		t.Errorf("Groups after the client left: %+v, %v; want none, and nothing kept", l, err)
	}
}

// TestTerminalsOpenInTheEnvironmentsFolder: a terminal opens in the environment's folder, not in
// the folder its tmux server was started in (this test's, or an earlier start's of the app from
// another folder).
func TestTerminalsOpenInTheEnvironmentsFolder(t *testing.T) {
	t.Parallel()
	repo, _, withRepo := withRepo(t)
	h := start(t, withRepo, withTerminals(app.TerminalSpec{Title: "sh"}))
	screen := h.typeAndWait(1, `echo "PWD""=[$(pwd -P)]"`, "PWDS")
	want, _ := filepath.EvalSymlinks(repo)
	if !strings.Contains(screen, "PWD=["+want+"]") {
		t.Errorf("the terminal opened elsewhere than %s:\n%s", want, screen)
	}
}
