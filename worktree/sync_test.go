package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// syncRepo makes a repository with an identity of its own (a sync's commits take it), and group
// g of it.
func syncRepo(t *testing.T) (*Repo, Group) {
	t.Helper()
	dir := newRepo(t)
	run(t, dir, "config", "user.name", "Person")
	run(t, dir, "config", "user.email", "person@example.com")
	r := open(t, dir)
	g, err := r.Create(context.Background(), CreateOptions{Name: "g", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return r, g
}

// commitIn writes files in dir and commits them there, with message.
func commitIn(t *testing.T, dir, message string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		write(t, dir, name, content)
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", message)
	return run(t, dir, "rev-parse", "HEAD")
}

func doSync(t *testing.T, r *Repo, how string) Result {
	t.Helper()
	return Do(context.Background(), Op{Op: OpSync, Dir: r.Top, Sync: &SyncOptions{Group: "g", How: how}})
}

// state is everything of a group a sync could change: every file of its checkout (its .git file
// included) with its bytes and mode, its index and HEAD byte for byte, and its branch's tip.
func state(t *testing.T, r *Repo, g Group) map[string]string {
	t.Helper()
	s := map[string]string{}
	err := filepath.WalkDir(g.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fi, _ := d.Info()
		s[p] = fi.Mode().String() + " " + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index", "HEAD"} {
		p := run(t, g.Dir, "rev-parse", "--path-format=absolute", "--git-path", name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s[p] = string(data)
	}
	s["branch"] = run(t, r.Top, "rev-parse", "refs/heads/"+g.Branch)
	return s
}

// TestSyncMerge: by default a sync merges the main checkout's HEAD into the group's branch: a
// merge commit with both as parents and the repository's identity, the group's files and index
// moved to it, the main checkout untouched; the group's base is HEAD from then on, so its Changes
// are its own work.
func TestSyncMerge(t *testing.T) {
	r, g := syncRepo(t)
	tip := commitIn(t, g.Dir, "worker's change", map[string]string{"a.txt": "a\n"})
	onto := commitIn(t, r.Top, "main moves on", map[string]string{"b.txt": "b\n"})
	res := doSync(t, r, "")
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	s := res.Synced
	if s.How != SyncMerge || s.Old != tip || s.Onto != onto || s.OntoName != "main" || s.New == tip || s.UpToDate || s.FastForward {
		t.Errorf("Synced = %+v", s)
	}
	if parents := run(t, r.Top, "rev-list", "--parents", "-n1", s.New); parents != s.New+" "+tip+" "+onto {
		t.Errorf("the merge's parents: %s, want %s and %s", parents, tip, onto)
	}
	if who := run(t, r.Top, "log", "-1", "--format=%cn <%ce>|%s", s.New); who != "Person <person@example.com>|Merge main into krad/g" {
		t.Errorf("the merge commit: %s", who)
	}
	if got := run(t, r.Top, "rev-parse", "refs/heads/krad/g"); got != s.New {
		t.Errorf("the branch is at %s, want %s", got, s.New)
	}
	if st := run(t, g.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("the group's checkout is not clean after the sync:\n%s", st)
	}
	if data, err := os.ReadFile(filepath.Join(g.Dir, "b.txt")); err != nil || string(data) != "b\n" {
		t.Errorf("the group's checkout has b.txt %q, %v", data, err)
	}
	if st := run(t, r.Top, "status", "--porcelain"); st != "" {
		t.Errorf("the main checkout was touched:\n%s", st)
	}
	c, err := open(t, r.Top).Changes(context.Background(), "g", ChangesOptions{Stat: true})
	if err != nil || c.Base != onto || len(c.Files) != 1 || c.Files[0].Path != "a.txt" {
		t.Errorf("Changes after the sync: base %s, files %+v, %v; want a.txt against %s", c.Base, c.Files, err, onto)
	}
	if res := doSync(t, r, SyncRebase); res.Error != nil || !res.Synced.UpToDate || res.Synced.New != s.New {
		t.Errorf("a second sync = %+v, want up to date", res)
	}
}

// TestSyncRebase: a rebase replays the group's commits onto HEAD, each with its author, date and
// message, the committer the repository's identity; one whose change HEAD has already is
// dropped.
func TestSyncRebase(t *testing.T) {
	r, g := syncRepo(t)
	commitIn(t, g.Dir, "first of the worker", map[string]string{"a.txt": "a\n"})
	run(t, g.Dir, "commit", "-q", "--allow-empty", "-m", "second, empty")
	commitIn(t, g.Dir, "the same as main's", map[string]string{"b.txt": "b\n"})
	old := run(t, r.Top, "rev-parse", "refs/heads/krad/g")
	onto := commitIn(t, r.Top, "main moves on", map[string]string{"b.txt": "b\n", "c.txt": "c\n"})
	res := doSync(t, r, SyncRebase)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	s := res.Synced
	if s.How != SyncRebase || s.Old != old || s.Commits != 3 || s.Dropped != 2 {
		t.Errorf("Synced = %+v, want 3 commits, 2 dropped (the empty one and main's)", s)
	}
	log := run(t, r.Top, "log", "--format=%P|%an|%cn|%s", onto+".."+s.New)
	want := onto + "|T|Person|first of the worker"
	if log != want {
		t.Errorf("the rebased branch:\n%s\nwant\n%s", log, want)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(g.Dir, f)); err != nil {
			t.Errorf("the group's checkout lacks %s: %v", f, err)
		}
	}
	if st := run(t, g.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("the group's checkout is not clean after the sync:\n%s", st)
	}
}

// TestSyncRebaseKeepsAuthors: a replayed commit keeps its author and date.
func TestSyncRebaseKeepsAuthors(t *testing.T) {
	r, g := syncRepo(t)
	write(t, g.Dir, "a.txt", "a\n")
	run(t, g.Dir, "add", "a.txt")
	run(t, g.Dir, "commit", "-q", "--author=Worker <w@example.com>", "--date=2001-02-03T04:05:06Z", "-m", "the worker's\n\nbody")
	onto := commitIn(t, r.Top, "main moves on", map[string]string{"c.txt": "c\n"})
	res := doSync(t, r, SyncRebase)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	got := run(t, r.Top, "log", "-1", "--format=%P|%an <%ae>|%ad|%cn|%B", "--date=iso-strict", res.Synced.New)
	if want := onto + "|Worker <w@example.com>|2001-02-03T04:05:06+00:00|Person|the worker's\n\nbody"; got != want {
		t.Errorf("the replayed commit:\n%s\nwant\n%s", got, want)
	}
}

// TestSyncConflict: a sync that conflicts, merged or rebased, names the files and changes
// nothing at all: the group's files, its index and HEAD byte for byte, its branch.
func TestSyncConflict(t *testing.T) {
	for _, how := range []string{SyncMerge, SyncRebase} {
		t.Run(how, func(t *testing.T) {
			r, g := syncRepo(t)
			commitIn(t, g.Dir, "worker's readme", map[string]string{"README": "the worker's\n", "a.txt": "a\n"})
			commitIn(t, r.Top, "main's readme", map[string]string{"README": "main's\n", "main.go": "package main\n// changed\n"})
			before := state(t, r, g)
			res := doSync(t, r, how)
			if res.Error == nil || res.Error.Code != api.CodeConflict || !errors.Is(res.Error, ErrConflict) {
				t.Fatalf("Sync = %+v, want a conflict", res)
			}
			msg := res.Error.Message
			if !strings.Contains(msg, "conflicts in 1 file: README") || !strings.Contains(msg, "Nothing was changed") {
				t.Errorf("the conflict says %q", msg)
			}
			if after := state(t, r, g); !reflect.DeepEqual(after, before) {
				for k, v := range after {
					if before[k] != v {
						t.Errorf("%s changed", k)
					}
				}
				if len(after) != len(before) {
					t.Errorf("%d files before, %d after", len(before), len(after))
				}
			}
		})
	}
}

// TestSyncRefusesUncommittedWork: a group with uncommitted work is refused, naming the files;
// nothing is stashed or changed.
func TestSyncRefusesUncommittedWork(t *testing.T) {
	r, g := syncRepo(t)
	commitIn(t, r.Top, "main moves on", map[string]string{"b.txt": "b\n"})
	write(t, g.Dir, "README", "edited, not committed\n")
	write(t, g.Dir, "new.txt", "untracked\n")
	before := state(t, r, g)
	res := doSync(t, r, "")
	if res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "uncommitted changes (2 files: README, new.txt)") {
		t.Fatalf("Sync = %+v, want a conflict naming the two files", res)
	}
	if after := state(t, r, g); !reflect.DeepEqual(after, before) {
		t.Error("the group changed")
	}
}

// TestSyncFastForward: a group with no commit of its own comes to HEAD, merged or rebased; one
// that has HEAD already is up to date.
func TestSyncFastForward(t *testing.T) {
	r, g := syncRepo(t)
	if res := doSync(t, r, ""); res.Error != nil || !res.Synced.UpToDate {
		t.Errorf("Sync of a group at HEAD = %+v, want up to date", res)
	}
	onto := commitIn(t, r.Top, "main moves on", map[string]string{"b.txt": "b\n"})
	res := doSync(t, r, SyncRebase)
	if res.Error != nil || !res.Synced.FastForward || res.Synced.New != onto {
		t.Fatalf("Sync = %+v, want a fast-forward to %s", res, onto)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "b.txt")); err != nil {
		t.Error(err)
	}
}

// TestSyncRefuses: bad input changes nothing: an unknown how, a group that does not exist, a
// rebase of a branch with a merge commit, a checkout not on its branch.
func TestSyncRefuses(t *testing.T) {
	r, g := syncRepo(t)
	if res := Do(context.Background(), Op{Op: OpSync, Dir: r.Top, Sync: &SyncOptions{Group: "g", How: "squash"}}); res.Error == nil || res.Error.Code != api.CodeBadRequest {
		t.Errorf("how squash: %+v", res)
	}
	if res := Do(context.Background(), Op{Op: OpSync, Dir: r.Top, Sync: &SyncOptions{Group: "nope"}}); res.Error == nil || res.Error.Code != api.CodeNotFound {
		t.Errorf("no such group: %+v", res)
	}
	run(t, g.Dir, "checkout", "-q", "-b", "side")
	commitIn(t, g.Dir, "side", map[string]string{"s.txt": "s\n"})
	run(t, g.Dir, "checkout", "-q", "krad/g")
	commitIn(t, g.Dir, "mine", map[string]string{"m.txt": "m\n"})
	run(t, g.Dir, "merge", "-q", "--no-edit", "side")
	commitIn(t, r.Top, "main moves on", map[string]string{"b.txt": "b\n"})
	if res := doSync(t, r, SyncRebase); res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "merge commits") {
		t.Errorf("rebase of a merge: %+v", res)
	}
	run(t, g.Dir, "checkout", "-q", "--detach")
	if res := doSync(t, r, ""); res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "not on its branch") {
		t.Errorf("detached: %+v", res)
	}
}
