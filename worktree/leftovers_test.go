package worktree

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// world is what the fault tests compare before and after a fault: everything of the repository
// and the worktrees root that a group's making or ending could leave behind.
type world struct {
	// refs: every ref (git for-each-ref) with its commit.
	refs map[string]string
	// worktrees: git worktree list --porcelain.
	worktrees string
	// admins: the folders in $GIT_COMMON_DIR/worktrees, each with what it holds, to tell why
	// one was left.
	admins []string
	// status: the main checkout's git status, untracked files included: no fault touches it.
	status string
	// files: every file and folder under the worktrees root but the repository's own folder
	// there (Root/<repo-key>) when it is empty: Create makes it and nothing removes it, since
	// a Create running at the same time may be about to make a group in it.
	files []string
}

// look is the world of r and root now.
func look(t *testing.T, r *Repo, root string) world {
	t.Helper()
	w := world{refs: map[string]string{}}
	for _, line := range strings.Split(refs(t, r.Top), "\n") {
		if name, commit, ok := strings.Cut(line, " "); ok {
			w.refs[name] = commit
		}
	}
	w.worktrees = run(t, r.Top, "worktree", "list", "--porcelain")
	w.status = run(t, r.Top, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all")
	entries, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	for _, e := range entries {
		admin := filepath.Join(r.CommonDir, "worktrees", e.Name())
		inside, _ := os.ReadDir(admin)
		var names []string
		for _, f := range inside {
			names = append(names, f.Name())
		}
		gitdir, _ := os.ReadFile(filepath.Join(admin, "gitdir"))
		locked, _ := os.ReadFile(filepath.Join(admin, "locked"))
		w.admins = append(w.admins, fmt.Sprintf("%s: holds %v, gitdir %q, locked %q", e.Name(), names, gitdir, locked))
	}
	keyDir := filepath.Join(root, r.Key)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			w.files = append(w.files, p+": "+err.Error())
			return nil
		}
		if p == root {
			return nil
		}
		if p == keyDir {
			if inside, _ := os.ReadDir(p); len(inside) == 0 {
				return nil
			}
		}
		w.files = append(w.files, strings.TrimPrefix(p, root+"/"))
		return nil
	})
	return w
}

// noLeftovers fails the test, saying after what, when after holds anything before did not, or
// lost anything it held, but for the refs in keep: those are what the design keeps (a snapshot
// ref refs/krad/snapshots/<name>, a branch that holds work), and each must be there after.
func noLeftovers(t *testing.T, what string, before, after world, keep ...string) {
	t.Helper()
	if diffs := leftoversOf(before, after, keep...); diffs != "" {
		t.Errorf("%s, not only what the design keeps is left:\n%s", what, diffs)
	}
}

// leftoversOf is noLeftovers's finding: "" when there is nothing to say.
func leftoversOf(before, after world, keep ...string) string {
	var diffs []string
	for _, name := range slices.Sorted(maps.Keys(after.refs)) {
		switch {
		case slices.Contains(keep, name):
		case before.refs[name] == "":
			diffs = append(diffs, "ref left: "+name)
		case before.refs[name] != after.refs[name]:
			diffs = append(diffs, fmt.Sprintf("ref %s moved from %s to %s", name, before.refs[name], after.refs[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before.refs)) {
		if _, ok := after.refs[name]; !ok {
			diffs = append(diffs, "ref gone: "+name)
		}
	}
	for _, name := range keep {
		if _, ok := after.refs[name]; !ok {
			diffs = append(diffs, "ref not kept: "+name)
		}
	}
	if after.worktrees != before.worktrees {
		diffs = append(diffs, fmt.Sprintf("worktrees:\n%s\nwere:\n%s", after.worktrees, before.worktrees))
	}
	if !slices.Equal(after.admins, before.admins) {
		diffs = append(diffs, fmt.Sprintf("admin folders: %q, were %q", after.admins, before.admins))
	}
	if after.status != before.status {
		diffs = append(diffs, fmt.Sprintf("the main checkout's status: %q, was %q", after.status, before.status))
	}
	if !slices.Equal(after.files, before.files) {
		diffs = append(diffs, fmt.Sprintf("under the worktrees root: %q, was %q", after.files, before.files))
	}
	return strings.Join(diffs, "\n")
}

// TestNoLeftoversSeesWhatIsLeft: the helper the fault tests lean on sees each kind of leftover,
// and lets pass only the refs it is told the design keeps.
func TestNoLeftoversSeesWhatIsLeft(t *testing.T) {
	for _, tt := range []struct {
		what  string
		fault func(t *testing.T, r *Repo, root string)
		keep  []string
	}{
		{"a branch", func(t *testing.T, r *Repo, root string) { run(t, r.Top, "branch", "krad/x") }, nil},
		{"a ref moved", func(t *testing.T, r *Repo, root string) {
			run(t, r.Top, "commit", "-q", "--allow-empty", "-m", "moved")
		}, nil},
		{"a ref gone", func(t *testing.T, r *Repo, root string) {
			run(t, r.Top, "checkout", "-q", "--detach")
			run(t, r.Top, "branch", "-D", "main")
		}, nil},
		{"a worktree", func(t *testing.T, r *Repo, root string) {
			run(t, r.Top, "worktree", "add", "-q", "--detach", filepath.Join(t.TempDir(), "wt"))
		}, nil},
		{"an admin folder", func(t *testing.T, r *Repo, root string) {
			os.MkdirAll(filepath.Join(r.CommonDir, "worktrees", "x"), 0o700)
		}, nil},
		{"a folder under the root", func(t *testing.T, r *Repo, root string) {
			os.MkdirAll(filepath.Join(root, r.Key, "x"), 0o700)
		}, nil},
		{"an edit in the main checkout", func(t *testing.T, r *Repo, root string) { write(t, r.Top, "README", "edited\n") }, nil},
		{"a kept ref that is not there", func(t *testing.T, r *Repo, root string) {}, []string{"refs/krad/snapshots/x"}},
	} {
		t.Run(tt.what, func(t *testing.T) {
			r, root := open(t, newRepo(t)), t.TempDir()
			before := look(t, r, root)
			tt.fault(t, r, root)
			if got := leftoversOf(before, look(t, r, root), tt.keep...); got == "" {
				t.Errorf("%s: the helper sees nothing left", tt.what)
			}
		})
	}

	// What the design keeps, and only that, passes; so does the repository's empty folder under
	// the root.
	r, root := open(t, newRepo(t)), t.TempDir()
	before := look(t, r, root)
	run(t, r.Top, "update-ref", "refs/krad/snapshots/x", "HEAD")
	if err := os.Mkdir(filepath.Join(root, r.Key), 0o700); err != nil {
		t.Fatal(err)
	}
	noLeftovers(t, "a snapshot ref kept", before, look(t, r, root), "refs/krad/snapshots/x")
}
