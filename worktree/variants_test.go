package worktree

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// newSet makes a repository with an identity of its own, and a set of n variants of it under
// the worktrees root root.
func newSet(t *testing.T, n int) (dir, root string, r *Repo, set Set) {
	t.Helper()
	dir = newRepo(t)
	run(t, dir, "config", "user.name", "Pat")
	run(t, dir, "config", "user.email", "pat@example.com")
	r = open(t, dir)
	root = t.TempDir()
	set, err := r.CreateSet(context.Background(), "Retry backoff!", root, SetOptions{Count: n, Lead: "main:1"})
	if err != nil {
		t.Fatalf("CreateSet: %v", err)
	}
	return dir, root, r, set
}

func TestCreateSet(t *testing.T) {
	dir, _, r, set := newSet(t, 3)
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

// TestCreateSetAllOrNothing: a set whose third group cannot be made (its folder is taken) is a
// conflict naming that folder, and leaves none of its groups: no branch or ref, no worktree, no
// admin folder, no folder under the worktrees root but the one that was there.
func TestCreateSetAllOrNothing(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	taken := filepath.Join(root, r.Key, "flaky-3")
	if err := os.MkdirAll(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	before := look(t, r, root)
	_, err := r.CreateSet(context.Background(), "flaky", root, SetOptions{Count: 3, Lead: "main:1"})
	// The set may take the next name when its first cannot be made; here its third cannot.
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, "folder "+taken+" exists") {
		t.Fatalf("CreateSet of a set whose third folder was taken: %v, want a conflict naming %s", err, taken)
	}
	noLeftovers(t, "after a set that could not be made", before, look(t, r, root))
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
	dir, _, r, set := newSet(t, 2)
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
			dir, _, r, set := newSet(t, 1)
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
// changes, or on a detached HEAD: each says why, and changes nothing but the winner's snapshot,
// which a pick keeps first: no other ref, no worktree or admin folder, nothing under the
// worktrees root, nothing of the main checkout's or the winner's index or files.
func TestPickRefuses(t *testing.T) {
	dir, root, r, set := newSet(t, 1)
	win := set.Groups[0]
	write(t, win.Dir, "README", "the variant's\n")
	write(t, win.Dir, "main.go", "package main\n\n// the variant's\n")
	write(t, dir, "README", "the main branch's\n")
	write(t, dir, "main.go", "package main\n\n// the main branch's\n")
	run(t, dir, "commit", "-qam", "meanwhile")
	snapshot := SnapshotPrefix + win.Name
	refuses := func(what string, o PickOptions, want string) {
		t.Helper()
		before, main, winner := look(t, r, root), lookAt(t, dir), lookAt(t, win.Dir)
		_, err := r.Pick(context.Background(), o)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeConflict || !strings.Contains(ae.Message, want) {
			t.Errorf("%s: %v, want a conflict saying %q", what, err, want)
		}
		noLeftovers(t, what, before, look(t, r, root), snapshot)
		main.same(t, what+", the main checkout", lookAt(t, dir))
		winner.same(t, what+", the winner's checkout", lookAt(t, win.Dir))
	}
	refuses("a pick that conflicts with the main branch", PickOptions{Group: win.Name, How: api.PickSquash},
		"variant "+win.Name+" conflicts with main in 2 files: README, main.go; nothing was changed")
	// The snapshot is the winner's whole state, its uncommitted edits.
	if got := run(t, dir, "show", snapshot+":README"); got != "the variant's" {
		t.Errorf("the snapshot holds README as %q", got)
	}
	run(t, dir, "reset", "-q", "--hard", "HEAD~")

	write(t, dir, "staged.txt", "x\n")
	run(t, dir, "add", "staged.txt")
	refuses("a pick over staged changes", PickOptions{Group: win.Name, How: api.PickApply}, "has staged changes")
	run(t, dir, "reset", "-q")
	run(t, dir, "checkout", "-q", "--detach")
	refuses("a squash on a detached HEAD", PickOptions{Group: win.Name, How: api.PickSquash}, "detached HEAD")
}

// TestPickTouchesNoOtherCheckout: a pick is computed off every checkout. A branch pick, and one
// that conflicts, leave the main checkout's and the winner's index and files as they were (their
// bytes and times, and what git status says); a squash changes the main checkout's files only
// where the pick says, keeps the person's own edits there, and leaves the winner's as it was.
func TestPickTouchesNoOtherCheckout(t *testing.T) {
	dir, _, r, set := newSet(t, 2)
	win := set.Groups[1]
	work(t, win)
	write(t, win.Dir, "README", "the variant's, not staged\n")
	write(t, win.Dir, "staged.txt", "the variant's, staged\n")
	run(t, win.Dir, "add", "staged.txt")
	// The person's own in the main checkout: an untracked file, an edit not staged.
	write(t, dir, "mine.txt", "the person's own\n")
	write(t, dir, "main.go", "package main\n\n// the person's edit\n")
	// git status as a person runs it refreshes the index: the times are set before any look.
	run(t, dir, "status", "-s")
	run(t, win.Dir, "status", "-s")

	main, winner := lookAt(t, dir), lookAt(t, win.Dir)
	if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickBranch}); err != nil {
		t.Fatalf("a branch pick: %v", err)
	}
	main.same(t, "after a branch pick, the main checkout", lookAt(t, dir))
	winner.same(t, "after a branch pick, the winner's checkout", lookAt(t, win.Dir))

	// The main branch moves on: a commit of its own to README, which the winner edits too.
	stash := run(t, dir, "stash", "create")
	run(t, dir, "checkout", "-q", "--", "main.go")
	write(t, dir, "README", "the main branch's\n")
	run(t, dir, "commit", "-qam", "meanwhile")
	run(t, dir, "stash", "apply", "-q", stash)
	run(t, dir, "status", "-s")
	main = lookAt(t, dir)
	if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a squash that conflicts: %v", err)
	}
	main.same(t, "after a conflicting pick, the main checkout", lookAt(t, dir))
	winner.same(t, "after a conflicting pick, the winner's checkout", lookAt(t, win.Dir))

	// Without that commit, the squash goes in: the main checkout changes where the pick says.
	run(t, dir, "stash", "-q")
	run(t, dir, "reset", "-q", "--hard", "HEAD~")
	run(t, dir, "stash", "pop", "-q")
	run(t, dir, "status", "-s")
	main = lookAt(t, dir)
	head := run(t, dir, "rev-parse", "HEAD")
	p, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickSquash})
	if err != nil {
		t.Fatalf("a squash: %v", err)
	}
	winner.same(t, "after a squash, the winner's checkout", lookAt(t, win.Dir))
	after := lookAt(t, dir)
	changed := strings.Fields(run(t, dir, "diff", "--name-only", head, p.Commit))
	if want := []string{"README", "notes.txt", "retry.go", "staged.txt"}; !slices.Equal(changed, want) {
		t.Errorf("the squash changed %q, want the winner's %q", changed, want)
	}
	for name, was := range main.files {
		if now := after.files[name]; now != was && !slices.Contains(changed, name) {
			t.Errorf("after a squash, %s of the main checkout, which the pick does not change, is %s, was %s", name, now, was)
		}
	}
	for _, name := range changed {
		if got, want := strings.Fields(after.files[name])[1], strings.Fields(winner.files[name])[1]; got != want {
			t.Errorf("after a squash, the main checkout's %s is not the winner's", name)
		}
	}
	if after.status != main.status {
		t.Errorf("after a squash, the main checkout's status is %q, was %q: the person's own edits stay theirs, and the pick is committed", after.status, main.status)
	}
}

// checkout is what a pick must not touch of a checkout it does not take the work into: its
// index's bytes and time, what git status says, and each file's bytes and time.
type checkout struct {
	index  string
	status string
	// files: each file (path from the checkout's top, .git left out, ignored files included) as
	// "<mtime> <sha256>", and each symbolic link as "symlink to <target>".
	files map[string]string
}

// lookAt is the checkout at dir now. git runs with --no-optional-locks, so that looking does not
// refresh the index.
func lookAt(t *testing.T, dir string) checkout {
	t.Helper()
	c := checkout{files: filesIn(t, dir)}
	c.index = sum(run(t, dir, "rev-parse", "--path-format=absolute", "--git-path", "index"))
	c.status = run(t, dir, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all")
	return c
}

// filesIn is each file under dir (path from dir, .git left out, ignored files included) as
// "<mtime> <sha256>", and each symbolic link as "symlink to <target>".
func filesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type().IsRegular():
			files[strings.TrimPrefix(p, dir+"/")] = sum(p)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files[strings.TrimPrefix(p, dir+"/")] = "symlink to " + target
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sum is the file at p as "<mtime> <sha256>", or the error that stopped reading it.
func sum(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return err.Error()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %x", fi.ModTime().UnixNano(), sha256.Sum256(b))
}

// same fails the test, saying what, when now differs from c in anything.
func (c checkout) same(t *testing.T, what string, now checkout) {
	t.Helper()
	if now.index != c.index {
		t.Errorf("%s: its index was written (%s, was %s)", what, now.index, c.index)
	}
	if now.status != c.status {
		t.Errorf("%s: git status says %q, said %q", what, now.status, c.status)
	}
	if !maps.Equal(now.files, c.files) {
		t.Errorf("%s: its files are\n%v\nwere\n%v", what, now.files, c.files)
	}
}

// TestPickOfADeletedVariant: a variant whose worker deleted its own checkout cannot be picked:
// the pick says so, changes nothing, and its branch is still there.
func TestPickOfADeletedVariant(t *testing.T) {
	dir, _, r, set := newSet(t, 2)
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

// TestPickWithoutIdentity: in a repository where git knows no one to commit as (no user.name,
// no user.email, here or in the global config, and no guessing: user.useConfigOnly), a squash
// or a merge is a conflict that says so and how to set them, and changes nothing: no ref (the
// winner's snapshot is not even made), nothing of the main checkout. An apply, which commits
// nothing, and a branch pick go in.
func TestPickWithoutIdentity(t *testing.T) {
	dir := newRepo(t)
	home := t.TempDir()
	global := filepath.Join(home, "gitconfig")
	// An empty config leaves git to guess an email from the user and the host's name, which a
	// machine with a domain name passes: useConfigOnly is what a person without one sees.
	if err := os.WriteFile(global, []byte("[user]\n\tuseConfigOnly = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("EMAIL", "")
	r := open(t, dir)
	root := t.TempDir()
	set, err := r.CreateSet(context.Background(), "who", root, SetOptions{Count: 1, Lead: "main:1"})
	if err != nil {
		t.Fatalf("CreateSet: %v", err)
	}
	win := set.Groups[0]
	work(t, win)
	for _, how := range []string{api.PickSquash, api.PickMerge} {
		before, main := look(t, r, root), lookAt(t, dir)
		_, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: how})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeConflict || ae.Reason != api.ReasonNoIdentity {
			t.Fatalf("a %s without an identity: %v, want a conflict (no_identity)", how, err)
		}
		for _, want := range []string{"no identity", "user.name", "user.email", "git config user.email", "nothing was changed"} {
			if !strings.Contains(ae.Message, want) {
				t.Errorf("a %s without an identity: %q, want it to say %q", how, ae.Message, want)
			}
		}
		if strings.Contains(ae.Message, "Please tell me who you are") {
			t.Errorf("a %s without an identity: %q, want git's one line, not its whole message", how, ae.Message)
		}
		noLeftovers(t, "a "+how+" without an identity", before, look(t, r, root))
		main.same(t, "a "+how+" without an identity, the main checkout", lookAt(t, dir))
	}
	if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: api.PickApply}); err != nil {
		t.Errorf("an apply without an identity: %v, want it done: it commits nothing", err)
	}
}
