package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
)

// TestRetireClean: a group that did nothing leaves nothing: no worktree, branch, ref, admin
// folder or checkout.
func TestRetireClean(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	g, err := r.Create(ctx, CreateOptions{Name: "idle", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	ret, err := r.Retire(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	want := Retired{Group: "idle", Dir: g.Dir, Removed: true, Branch: "krad/idle", BranchDeleted: true}
	if !reflect.DeepEqual(ret, want) {
		t.Errorf("Retire = %+v, want %+v", ret, want)
	}
	noLeftovers(t, "a group that did nothing retired", before, look(t, r, root))
	if _, err := os.Stat(g.Dir); err == nil {
		t.Errorf("the checkout %s is still there", g.Dir)
	}
	if groups, err := r.Groups(ctx); err != nil || len(groups) != 0 {
		t.Errorf("Groups after Retire = %+v, %v", groups, err)
	}
}

// TestRetireKeepsWork: uncommitted work goes to a snapshot, commits keep the branch, and the
// snapshot holds every file as it was.
func TestRetireKeepsWork(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "busy")
	write(t, g.Dir, "main.go", "package main // committed\n")
	run(t, g.Dir, "commit", "-q", "-am", "work")
	head := run(t, g.Dir, "rev-parse", "HEAD")
	write(t, g.Dir, "README", "unstaged\n")
	write(t, g.Dir, "staged", "staged\n")
	run(t, g.Dir, "add", "staged")
	write(t, g.Dir, "untracked", "untracked\n")
	write(t, g.Dir, "x.log", "ignored\n")
	ret, err := r.Retire(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if !ret.Removed || ret.Snapshot != "refs/krad/snapshots/busy" || ret.BranchDeleted || ret.BranchKept != "it is no longer at its base commit (it holds commits, or was moved)" {
		t.Errorf("Retire = %+v", ret)
	}
	if got := run(t, r.Top, "rev-parse", "refs/heads/krad/busy"); got != head {
		t.Errorf("branch krad/busy = %s, want %s", got, head)
	}
	snap := ret.SnapshotCommit
	if got := run(t, r.Top, "rev-parse", snap+"^1"); got != head {
		t.Errorf("the snapshot's parent = %s, want HEAD %s", got, head)
	}
	if got := run(t, r.Top, "log", "-1", "--format=%an <%ae> %cn", snap); got != "krad-ade <krad-ade@localhost> krad-ade" {
		t.Errorf("the snapshot's identity = %s", got)
	}
	for path, want := range map[string]string{"README": "unstaged", "staged": "staged", "untracked": "untracked", "main.go": "package main // committed"} {
		if got := run(t, r.Top, "show", snap+":"+path); got != want {
			t.Errorf("snapshot %s = %q, want %q", path, got, want)
		}
	}
	if out := run(t, r.Top, "ls-tree", "--name-only", snap); strings.Contains(out, "x.log") {
		t.Errorf("the snapshot holds an ignored file:\n%s", out)
	}

	// Only uncommitted work, no commits: the branch is kept for the snapshot's sake.
	_, g2 := r, mustCreate(t, r, "dirty")
	write(t, g2.Dir, "README", "dirty\n")
	ret, err = r.Retire(ctx, "dirty")
	if err != nil || !strings.Contains(ret.BranchKept, "snapshot") || ret.BranchDeleted {
		t.Errorf("Retire(dirty) = %+v, %v; want the branch kept for the snapshot", ret, err)
	}
}

func mustCreate(t *testing.T, r *Repo, name string) Group {
	t.Helper()
	g, err := r.Create(context.Background(), CreateOptions{Name: name, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRetireASecondSnapshot: a later group of the same name keeps the earlier snapshot too.
func TestRetireASecondSnapshot(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "again")
	write(t, g.Dir, "README", "first\n")
	first, err := r.Retire(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	g, err = r.Create(ctx, CreateOptions{Name: "again", Branch: "krad/again", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	write(t, g.Dir, "README", "second\n")
	second, err := r.Retire(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, r.Top, "rev-parse", second.SnapshotCommit+"^2"); got != first.SnapshotCommit {
		t.Errorf("the second snapshot's second parent = %s, want the first snapshot %s", got, first.SnapshotCommit)
	}
	if second.BranchKept != "the app did not make it" {
		t.Errorf("a continued branch: BranchKept = %q", second.BranchKept)
	}
}

// TestRetireFolderGone: a worker that deleted its own folder: the group retires, its branch
// kept when it holds commits.
func TestRetireFolderGone(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "rm")
	write(t, g.Dir, "f", "f\n")
	run(t, g.Dir, "add", "f")
	run(t, g.Dir, "commit", "-q", "-m", "f")
	if err := os.RemoveAll(g.Dir); err != nil {
		t.Fatal(err)
	}
	groups, err := r.Groups(ctx)
	if err != nil || len(groups) != 1 || !groups[0].Missing {
		t.Fatalf("Groups = %+v, %v; want the group, missing", groups, err)
	}
	ret, err := r.Retire(ctx, "rm")
	if err != nil || !ret.Removed || ret.Snapshot != "" || ret.BranchKept != "it is no longer at its base commit (it holds commits, or was moved)" {
		t.Errorf("Retire = %+v, %v", ret, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees")); len(entries) != 0 {
		t.Errorf("admin folders left: %v", entries)
	}
}

// TestRetireRebased: a worker that rebased its branch onto another base (git rebase --onto, a
// branch made from an older commit): Changes still compares against the group's base_commit, in
// a patch that applies there, and Retire keeps the branch, which holds the worker's commit.
func TestRetireRebased(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "reb")
	// Another base: a branch from the commit before the group's base, with a commit of its own.
	run(t, r.Top, "branch", "other", g.BaseCommit+"~1")
	other := t.TempDir()
	run(t, r.Top, "worktree", "add", "-q", other, "other")
	write(t, other, "other.txt", "from the other base\n")
	run(t, other, "add", "other.txt")
	run(t, other, "commit", "-q", "-m", "other base")
	run(t, r.Top, "worktree", "remove", other)
	// The worker commits, then moves its commit onto the other base.
	write(t, g.Dir, "work.txt", "the worker's\n")
	run(t, g.Dir, "add", "work.txt")
	run(t, g.Dir, "commit", "-q", "-m", "work")
	run(t, g.Dir, "rebase", "-q", "--onto", "other", g.BaseCommit)
	head := run(t, g.Dir, "rev-parse", "HEAD")
	if parent := run(t, g.Dir, "rev-parse", "HEAD~1"); parent != run(t, r.Top, "rev-parse", "other") {
		t.Fatalf("after the rebase HEAD~1 is %s, not the other base", parent)
	}

	c, err := r.Changes(ctx, "reb", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range c.Files {
		files[f.Path] = f.Status
	}
	// Against base_commit: the other base lacks what the base's commit "more" added.
	want := map[string]string{"work.txt": "A", "other.txt": "A", ".gitignore": "D", "old.txt": "D", "logo.bin": "D"}
	if c.Base != g.BaseCommit || c.Head != head || !reflect.DeepEqual(files, want) {
		t.Errorf("Changes after the rebase: base %s head %s files %v; want base %s head %s files %v", c.Base, c.Head, files, g.BaseCommit, head, want)
	}
	if len(c.Commits) != 2 || c.Commits[0].Subject != "work" || c.Commits[1].Subject != "other base" {
		t.Errorf("Changes after the rebase lists the commits %+v, want work and other base", c.Commits)
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(patch, []byte(c.Patch), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, r.Top, "apply", "--check", patch) // the main checkout is at base_commit

	ret, err := r.Retire(ctx, "reb")
	if err != nil || !ret.Removed || ret.BranchDeleted || ret.Snapshot != "" || ret.BranchKept != "it is no longer at its base commit (it holds commits, or was moved)" {
		t.Errorf("Retire = %+v, %v; want the checkout removed and the branch kept", ret, err)
	}
	if tip := run(t, r.Top, "rev-parse", "refs/heads/krad/reb"); tip != head {
		t.Errorf("the kept branch is at %s, want the rebased work %s", tip, head)
	}
}

// TestWorkerCannotRemove: git worktree remove, run by the worker, is refused by the lock.
func TestWorkerCannotRemove(t *testing.T) {
	r, g := newGroup(t, "locked")
	out, err := gitOutput(g.Dir, "worktree", "remove", "--force", g.Dir)
	if err == nil || !strings.Contains(out, "locked") {
		t.Errorf("git worktree remove = %v, %s; want it refused for the lock", err, out)
	}
	if groups, err := r.Groups(context.Background()); err != nil || len(groups) != 1 {
		t.Errorf("Groups = %+v, %v; want the group still there", groups, err)
	}
}

// failingGit puts on PATH a git that fails when its command line has word, and runs the real git
// otherwise: a fault injected into one step.
func failingGit(t *testing.T, word string) {
	t.Helper()
	t.Setenv("PATH", testbin.FailingGit(t, word)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestRetireFailureKeepsTheWorktree: when a step fails, the worktree stays, locked, and the
// error names its folder; the uncommitted work is never lost.
func TestRetireFailureKeepsTheWorktree(t *testing.T) {
	ctx := context.Background()
	for _, word := range []string{"commit-tree", "remove"} {
		t.Run(word, func(t *testing.T) {
			r, g := newGroup(t, "stuck")
			write(t, g.Dir, "README", "uncommitted\n")
			failingGit(t, word)
			ret, err := r.Retire(ctx, "stuck")
			if err == nil || !strings.Contains(err.Error(), g.Dir) || !strings.Contains(err.Error(), "injected") || ret.Removed {
				t.Fatalf("Retire = %+v, %v; want an error naming %s", ret, err, g.Dir)
			}
			groups, gerr := r.Groups(ctx)
			if gerr != nil || len(groups) != 1 || !groups[0].Locked || groups[0].Missing {
				t.Errorf("Groups = %+v, %v; want the group, there and locked", groups, gerr)
			}
			if data, _ := os.ReadFile(filepath.Join(g.Dir, "README")); string(data) != "uncommitted\n" {
				t.Errorf("README = %q: the uncommitted work is touched", data)
			}
			if run(t, r.Top, "rev-parse", "--verify", "-q", "refs/heads/krad/stuck") == "" {
				t.Errorf("the branch is gone")
			}
		})
	}
}

// TestGroups: only the worktrees the app made are groups; one detached by its worker still is.
func TestGroups(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "one")
	run(t, r.Top, "worktree", "add", "-q", "--detach", filepath.Join(t.TempDir(), "by-hand"))
	two := mustCreate(t, r, "two")
	run(t, two.Dir, "checkout", "-q", "--detach")
	groups, err := r.Groups(ctx)
	if err != nil || len(groups) != 2 {
		t.Fatalf("Groups = %+v, %v; want one and two", groups, err)
	}
	for i, want := range []Group{g, two} {
		got := groups[i]
		if got.Name != want.Name || got.Dir != want.Dir || got.Branch != want.Branch || got.BaseCommit != want.BaseCommit || !got.Locked || got.Missing {
			t.Errorf("Groups()[%d] = %+v, want %+v", i, got, want)
		}
	}
}

// TestGroupsWithADamagedRecord: a group whose record in its admin folder cannot be read is
// listed as damaged, with what to do, and spoils nothing else: the other groups are listed and
// served, its name is refused to Create, and Changes and Retire refuse it without touching it.
func TestGroupsWithADamagedRecord(t *testing.T) {
	ctx := context.Background()
	r, bad := newGroup(t, "bad")
	good := mustCreate(t, r, "good")
	admin := run(t, bad.Dir, "rev-parse", "--path-format=absolute", "--git-dir")
	if err := os.WriteFile(filepath.Join(admin, metaFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := refs(t, r.Top)
	groups, err := r.Groups(ctx)
	if err != nil || len(groups) != 2 {
		t.Fatalf("Groups = %+v, %v; want bad (damaged) and good", groups, err)
	}
	if g := groups[0]; g.Name != "bad" || g.Dir != bad.Dir || !strings.Contains(g.Damaged, "git worktree remove") {
		t.Errorf("the damaged group is listed as %+v; want its name, its folder and what to do", g)
	}
	if g := groups[1]; g.Name != "good" || g.Damaged != "" || g.BaseCommit != good.BaseCommit {
		t.Errorf("the good group is listed as %+v", g)
	}
	if _, err := r.Changes(ctx, "good", ChangesOptions{}); err != nil {
		t.Errorf("Changes of the good group: %v", err)
	}
	for what, err := range map[string]error{
		"Changes": func() error { _, err := r.Changes(ctx, "bad", ChangesOptions{}); return err }(),
		"Retire":  func() error { _, err := r.Retire(ctx, "bad"); return err }(),
		"Create":  func() error { _, err := r.Create(ctx, CreateOptions{Name: "bad", Root: t.TempDir()}); return err }(),
	} {
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "cannot be read") {
			t.Errorf("%s of the damaged group: %v; want a conflict that says its record cannot be read", what, err)
		}
	}
	if _, err := os.Stat(bad.Dir); err != nil {
		t.Errorf("the damaged group's checkout: %v; want it left alone", err)
	}
	if after := refs(t, r.Top); after != before {
		t.Errorf("refs changed:\n%s\nwant\n%s", after, before)
	}
}

// TestNothingLeftButWhatIsKept: groups made, worked in and retired leave exactly what the design
// keeps: the snapshot refs of uncommitted work, and the branches that hold commits or a
// snapshot. No worktree, admin folder, checkout or other ref.
func TestNothingLeftButWhatIsKept(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	idle, _ := r.Create(ctx, CreateOptions{Name: "idle", Root: root})
	committed, _ := r.Create(ctx, CreateOptions{Name: "committed", Root: root})
	dirty, err := r.Create(ctx, CreateOptions{Name: "dirty", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	write(t, committed.Dir, "c", "c\n")
	run(t, committed.Dir, "add", "c")
	run(t, committed.Dir, "commit", "-q", "-m", "c")
	write(t, dirty.Dir, "d", "d\n")
	for _, g := range []Group{idle, committed, dirty} {
		if _, err := r.Retire(ctx, g.Name); err != nil {
			t.Fatal(err)
		}
	}
	noLeftovers(t, "three groups retired", before, look(t, r, root),
		"refs/heads/krad/committed", "refs/heads/krad/dirty", "refs/krad/snapshots/dirty")
}

// TestContinueRestoresSnapshot: a kept branch continued comes back with its retired group's
// uncommitted work, uncommitted.
func TestContinueRestoresSnapshot(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "kept")
	write(t, g.Dir, "README", "edited\n")
	write(t, g.Dir, "untracked", "new\n")
	run(t, g.Dir, "rm", "-q", "old.txt")
	ret, err := r.Retire(ctx, "kept")
	if err != nil || ret.Snapshot == "" || ret.BranchDeleted {
		t.Fatalf("Retire = %+v, %v", ret, err)
	}
	g2, err := r.Create(ctx, CreateOptions{Name: "again", Branch: "krad/kept", Root: t.TempDir()})
	if err != nil || g2.Restored != ret.SnapshotCommit {
		t.Fatalf("Create = %+v, %v; want the snapshot %s restored", g2, err, ret.SnapshotCommit)
	}
	// run trims the status's first space.
	if got, want := run(t, g2.Dir, "status", "--porcelain"), "M README\n D old.txt\n?? untracked"; got != want {
		t.Errorf("status after the restore:\n%s\nwant\n%s", got, want)
	}
	c, err := r.Changes(ctx, "again", ChangesOptions{Stat: true})
	if err != nil || len(c.Files) != 3 {
		t.Errorf("Changes = %+v, %v; want the 3 restored files", c.Files, err)
	}
}

// TestKept: what retired groups left, by name; a live group's branch is not listed.
func TestKept(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "live")
	committed := mustCreate(t, r, "committed")
	write(t, committed.Dir, "c", "c\n")
	run(t, committed.Dir, "add", "c")
	run(t, committed.Dir, "commit", "-q", "-m", "c")
	dirty := mustCreate(t, r, "dirty")
	write(t, dirty.Dir, "README", "dirty\n")
	mustCreate(t, r, "idle")
	for _, name := range []string{"committed", "dirty", "idle"} {
		if _, err := r.Retire(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	run(t, r.Top, "branch", "other") // not the app's
	kept, err := r.Kept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range kept {
		names = append(names, k.Name)
		if k.Name == "dirty" && (k.Branch != "krad/dirty" || k.Snapshot != "refs/krad/snapshots/dirty") {
			t.Errorf("kept dirty = %+v, want its branch and its snapshot", k)
		}
	}
	if strings.Join(names, " ") != "committed dirty" {
		t.Errorf("Kept = %+v, want committed and dirty (not %s, which lives)", kept, g.Name)
	}
}

// TestChangesRacingRetire: Changes asked again and again, from two callers, while the group
// retires: every answer is the group's whole changes, the same each time, or an error that says
// the group is retiring or gone; never "no changes", never a part of them (git worktree remove
// deletes the checkout's files one by one, and a Changes reading them then would see them
// deleted). Afterwards only what the design
// keeps is left: the branch, which holds a commit, and the snapshot of the uncommitted work.
func TestChangesRacingRetire(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	for i := range 400 {
		write(t, dir, fmt.Sprintf("pkg/%02d/file%03d.go", i%20, i), "package pkg\n")
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "more files, for a removal that takes a while")
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	const rounds = 3
	for round := range rounds {
		name := fmt.Sprintf("race%d", round)
		g, err := r.Create(ctx, CreateOptions{Name: name, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		write(t, g.Dir, "main.go", "package main // committed\n")
		run(t, g.Dir, "commit", "-q", "-am", "work")
		write(t, g.Dir, "README", "uncommitted\n")
		write(t, g.Dir, "pkg/00/file000.go", "package pkg // uncommitted\n")
		want, err := r.Changes(ctx, name, ChangesOptions{})
		if err != nil || len(want.Files) != 3 || len(want.Commits) != 1 {
			t.Fatalf("Changes before the race = %+v, %v; want 3 files and a commit", want, err)
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		answers, errs := 0, 0
		kinds := map[string]int{} // the errors, by kind
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := r.Changes(ctx, name, ChangesOptions{})
					mu.Lock()
					if err != nil {
						errs++
						switch {
						case errors.Is(err, ErrRetiring):
							kinds["retiring"]++
						case errors.Is(err, ErrNotFound):
							kinds["not found"]++
						default:
							t.Errorf("round %d: Changes while the group retires: %v; want it to say the group is retiring, or gone", round, err)
						}
					} else {
						answers++
						if !reflect.DeepEqual(c, want) {
							t.Errorf("round %d: Changes while the group retires = %d files %+v, %d commits; want the whole %d files %+v",
								round, len(c.Files), c.Files, len(c.Commits), len(want.Files), want.Files)
						}
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(round) * 20 * time.Millisecond) // meet Retire at its different steps
		ret, err := r.Retire(ctx, name)
		time.Sleep(50 * time.Millisecond) // and a while after
		close(stop)
		wg.Wait()
		if err != nil || !ret.Removed || ret.Snapshot == "" {
			t.Fatalf("round %d: Retire = %+v, %v", round, ret, err)
		}
		t.Logf("round %d: %d whole answers, %d errors: %v", round, answers, errs, kinds)
		if errs == 0 {
			t.Errorf("round %d: no Changes answered after the group retired", round)
		}
		if _, err := r.Changes(ctx, name, ChangesOptions{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("round %d: Changes after Retire = %v, want not found", round, err)
		}
	}
	var keep []string
	for round := range rounds {
		keep = append(keep, fmt.Sprintf("refs/heads/krad/race%d", round), fmt.Sprintf("refs/krad/snapshots/race%d", round))
	}
	noLeftovers(t, "Changes racing Retire", before, look(t, r, root), keep...)
}

// gitHook puts on PATH a git that runs the shell code hook, with the variables of env, before it
// runs the real git for a command line that has word: a step of another process, made to happen
// at a known moment.
func gitHook(t *testing.T, word, hook string, env map[string]string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("HOOK_REAL_GIT", real)
	bin := t.TempDir()
	script := "#!/bin/sh\nfor a; do if [ \"$a\" = " + word + " ]; then\n" + hook + "\nfi; done\nexec \"$HOOK_REAL_GIT\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestChangesWhileRemoved: the moments TestChangesRacingRetire meets by chance, made to happen: a
// Changes asked while git worktree remove has deleted part of the checkout, and ones whose
// reading had begun before the removal began. Each answers an error, not the files left.
func TestChangesWhileRemoved(t *testing.T) {
	ctx := context.Background()
	t.Run("asked during the removal", func(t *testing.T) {
		r, g := newGroup(t, "going")
		write(t, g.Dir, "README", "uncommitted\n")
		meet := t.TempDir()
		gitHook(t, "remove", `rm -f "$HOOK_DIR/main.go" "$HOOK_DIR/old.txt"; : > "$HOOK_MEET/started"
i=0; while [ ! -e "$HOOK_MEET/go" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`,
			map[string]string{"HOOK_DIR": g.Dir, "HOOK_MEET": meet})
		done := make(chan error, 1)
		go func() { _, err := r.Retire(ctx, "going"); done <- err }()
		for i := 0; ; i++ {
			if _, err := os.Stat(filepath.Join(meet, "started")); err == nil {
				break
			}
			if i == 1000 {
				t.Fatal("git worktree remove did not start")
			}
			time.Sleep(10 * time.Millisecond)
		}
		c, err := r.Changes(ctx, "going", ChangesOptions{})
		var e *api.Error
		if !errors.Is(err, ErrRetiring) || !errors.As(err, &e) || e.Code != api.CodeConflict || !strings.Contains(e.Message, "retiring") {
			t.Errorf("Changes during the removal = %d files %+v, %v; want a conflict, ErrRetiring", len(c.Files), c.Files, err)
		}
		os.WriteFile(filepath.Join(meet, "go"), nil, 0o600)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("removal begun during the reading", func(t *testing.T) {
		r, g := newGroup(t, "going")
		write(t, g.Dir, "README", "uncommitted\n")
		// Retire's first mark, made while Changes reads the checkout (check-attr is its last
		// step).
		gitHook(t, "check-attr", `: > "$HOOK_MARK"`, map[string]string{"HOOK_MARK": r.retiringMark("going")})
		c, err := r.Changes(ctx, "going", ChangesOptions{})
		if !errors.Is(err, ErrRetiring) {
			t.Errorf("Changes whose reading met the removal = %d files, %v; want ErrRetiring", len(c.Files), err)
		}
	})
	t.Run("removal past the checkout during the reading", func(t *testing.T) {
		// git deletes the admin folder's files in no set order: the mark may be gone while the
		// record is there, but then the checkout is gone already.
		r, g := newGroup(t, "going")
		write(t, g.Dir, "README", "uncommitted\n")
		gitHook(t, "check-attr", `rm -rf "$HOOK_DIR"`, map[string]string{"HOOK_DIR": g.Dir})
		c, err := r.Changes(ctx, "going", ChangesOptions{})
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "retired while its changes were read") {
			t.Errorf("Changes whose reading met the removal = %d files, %v; want not found, saying it retired meanwhile", len(c.Files), err)
		}
	})
}
