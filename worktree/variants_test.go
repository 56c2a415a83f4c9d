package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// newSet makes a repository with an identity of its own, and a set of n variants of it.
func newSet(t *testing.T, n int) (dir string, r *Repo, set Set) {
	t.Helper()
	dir = newRepo(t)
	run(t, dir, "config", "user.name", "Pat")
	run(t, dir, "config", "user.email", "pat@example.com")
	r = open(t, dir)
	set, err := r.CreateSet(context.Background(), "Retry backoff!", t.TempDir(), SetOptions{Count: n, Lead: "main:1"})
	if err != nil {
		t.Fatalf("CreateSet: %v", err)
	}
	return dir, r, set
}

func TestCreateSet(t *testing.T) {
	dir, r, set := newSet(t, 3)
	head := run(t, dir, "rev-parse", "HEAD")
	if set.Name != "retry-backoff" || set.BaseCommit != head || len(set.Groups) != 3 {
		t.Fatalf("CreateSet = %+v", set)
	}
	groups, err := r.Groups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		// Joined: its worker starts at once, so a restart that finds it without one retires it.
		if want := "retry-backoff-" + string(rune('1'+i)); g.Name != want || g.Set != "retry-backoff" || g.Lead != "main:1" || g.BaseCommit != head || !g.Joined {
			t.Errorf("group %d = %+v, want %s of the set, from %s, joined", i, g, want, head)
		}
	}
	// A second set of the same title gets a name of its own.
	again, err := r.CreateSet(context.Background(), "retry backoff", t.TempDir(), SetOptions{Count: 1, Lead: "main:1"})
	if err != nil || again.Name != "retry-backoff-2" {
		t.Errorf("a second set: %+v, %v; want retry-backoff-2", again, err)
	}
	if _, err := r.CreateSet(context.Background(), "x", t.TempDir(), SetOptions{Count: 9}); err == nil {
		t.Error("a set of 9 was made")
	}
}

// TestCreateSetAllOrNothing: a set whose third group cannot be made (its folder is taken) leaves
// none of its groups, nor their branches.
func TestCreateSetAllOrNothing(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, r.Key, "flaky-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := refs(t, dir)
	_, err := r.CreateSet(context.Background(), "flaky", root, SetOptions{Count: 3, Lead: "main:1"})
	if err == nil {
		// The set may take the next name when its first cannot be made; here its third cannot.
		t.Fatal("CreateSet made a set whose third folder was taken")
	}
	if after := refs(t, dir); after != before {
		t.Errorf("refs after a failed set:\n%s\nbefore:\n%s", after, before)
	}
	if gs, _ := r.Groups(context.Background()); len(gs) != 0 {
		t.Errorf("groups left after a failed set: %+v", gs)
	}
}

// work writes the winner's change: a commit of its own, and an uncommitted file.
func work(t *testing.T, g Group) {
	t.Helper()
	write(t, g.Dir, "retry.go", "package main\n\nfunc retry() {}\n")
	run(t, g.Dir, "add", "retry.go")
	run(t, g.Dir, "commit", "-q", "-m", "retry")
	write(t, g.Dir, "notes.txt", "uncommitted\n")
}

func TestPickSquash(t *testing.T) {
	dir, r, set := newSet(t, 2)
	win := set.Groups[1]
	work(t, win)
	write(t, dir, "unrelated.txt", "the person's own, not staged\n")
	head := run(t, dir, "rev-parse", "HEAD")
	p, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash, Message: "retry: backoff"})
	if err != nil {
		t.Fatalf("Pick: %v", err)
	}
	if got := run(t, dir, "rev-parse", "HEAD"); got != p.Commit || p.Branch != "main" {
		t.Errorf("HEAD is %s, branch %s; want the pick's commit %s on main", got, p.Branch, p.Commit)
	}
	if parents := run(t, dir, "rev-list", "--parents", "-n1", p.Commit); parents != p.Commit+" "+head {
		t.Errorf("a squash has one parent, the old HEAD: %s", parents)
	}
	if msg := run(t, dir, "log", "-1", "--format=%s %an"); msg != "retry: backoff Pat" {
		t.Errorf("the commit is %q, want the message by the repository's own identity", msg)
	}
	// Its whole state: the commit and the uncommitted file; the checkout shows it, clean.
	for _, f := range []string{"retry.go", "notes.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("after the squash, the main checkout lacks %s", f)
		}
	}
	if st := run(t, dir, "status", "--porcelain"); st != "?? unrelated.txt" {
		t.Errorf("status after the squash: %q, want only the person's own untracked file", st)
	}
	if snap := run(t, dir, "rev-parse", SnapshotPrefix+win.Name); snap != p.Snapshot {
		t.Errorf("the snapshot ref is %s, the pick says %s", snap, p.Snapshot)
	}
	g, _ := r.group(context.Background(), win.Name)
	if !strings.HasPrefix(g.Picked, "squash "+p.Commit) {
		t.Errorf("the winner's record says picked %q", g.Picked)
	}
}

func TestPickApplyMergeBranch(t *testing.T) {
	for _, how := range []string{api.PickApply, api.PickMerge, api.PickBranch} {
		t.Run(how, func(t *testing.T) {
			dir, r, set := newSet(t, 1)
			win := set.Groups[0]
			work(t, win)
			head := run(t, dir, "rev-parse", "HEAD")
			p, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: how})
			if err != nil {
				t.Fatalf("Pick: %v", err)
			}
			switch how {
			case api.PickApply:
				if got := run(t, dir, "rev-parse", "HEAD"); got != head || p.Commit != "" {
					t.Errorf("apply moved HEAD to %s (commit %q)", got, p.Commit)
				}
				if st := run(t, dir, "status", "--porcelain"); st != "A  notes.txt\nA  retry.go" {
					t.Errorf("apply left status %q, want both files staged", st)
				}
			case api.PickMerge:
				if parents := run(t, dir, "rev-list", "--parents", "-n1", "HEAD"); parents != p.Commit+" "+head+" "+p.Snapshot {
					t.Errorf("a merge's parents: %s, want the old HEAD and the snapshot", parents)
				}
			case api.PickBranch:
				if got := run(t, dir, "rev-parse", "HEAD"); got != head || p.Branch != win.Branch {
					t.Errorf("branch touched the main checkout (HEAD %s) or names %q", got, p.Branch)
				}
			}
		})
	}
}

// TestPickRefuses: a pick that conflicts with the main branch, a main checkout with staged
// changes, or on a detached HEAD: each changes nothing and says why.
func TestPickRefuses(t *testing.T) {
	dir, r, set := newSet(t, 1)
	win := set.Groups[0]
	write(t, win.Dir, "README", "the variant's\n")
	write(t, dir, "README", "the main branch's\n")
	run(t, dir, "commit", "-qam", "meanwhile")
	head := run(t, dir, "rev-parse", "HEAD")
	before := refs(t, dir)
	_, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, "in 1 file: README;") {
		t.Errorf("a conflicting pick: %v, want conflict naming README", err)
	}
	if after := refs(t, dir); strings.ReplaceAll(after, SnapshotPrefix, "") == after && after != before {
		t.Errorf("refs changed:\n%s", after)
	}
	if got := run(t, dir, "rev-parse", "HEAD"); got != head || run(t, dir, "status", "--porcelain") != "" {
		t.Error("a conflicting pick touched the main checkout")
	}

	write(t, dir, "staged.txt", "x\n")
	run(t, dir, "add", "staged.txt")
	if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickApply}); err == nil || !strings.Contains(err.Error(), "staged changes") {
		t.Errorf("a pick over staged changes: %v", err)
	}
	run(t, dir, "reset", "-q")
	run(t, dir, "checkout", "-q", "--detach")
	if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash}); err == nil || !strings.Contains(err.Error(), "detached HEAD") {
		t.Errorf("a squash on a detached HEAD: %v", err)
	}
}

// TestPickOfADeletedVariant: a variant whose worker deleted its own checkout cannot be picked:
// the pick says so, changes nothing, and its branch is still there.
func TestPickOfADeletedVariant(t *testing.T) {
	dir, r, set := newSet(t, 2)
	win := set.Groups[0]
	work(t, win)
	if err := os.RemoveAll(win.Dir); err != nil {
		t.Fatal(err)
	}
	head := run(t, dir, "rev-parse", "HEAD")
	_, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash})
	if !errors.Is(err, ErrFolderGone) || !strings.Contains(err.Error(), "krad/"+win.Name) {
		t.Errorf("a pick of a deleted variant: %v, want the folder-gone error naming its branch", err)
	}
	if run(t, dir, "rev-parse", "HEAD") != head || run(t, dir, "status", "--porcelain") != "" {
		t.Error("the pick touched the main checkout")
	}
	run(t, dir, "rev-parse", "--verify", "refs/heads/krad/"+win.Name)
}
