package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
)

func TestCreate(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	head := run(t, dir, "rev-parse", "HEAD")
	g, err := r.Create(context.Background(), CreateOptions{Name: "fix-retry", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := Group{Name: "fix-retry", Dir: filepath.Join(root, r.Key, "fix-retry"), Branch: "krad/fix-retry",
		BaseCommit: head, MadeBranch: true, Head: head, Locked: true, Port: FirstPort}
	g.Created, g.admin = want.Created, ""
	if !reflect.DeepEqual(g, want) {
		t.Errorf("Create = %+v, want %+v", g, want)
	}
	if got := run(t, g.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/krad/fix-retry" {
		t.Errorf("the checkout's HEAD = %s, want refs/heads/krad/fix-retry", got)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "main.go")); err != nil {
		t.Errorf("the checkout has no main.go: %v", err)
	}
	if got := run(t, dir, "worktree", "list", "--porcelain"); !strings.Contains(got, "locked krad-ade group fix-retry") {
		t.Errorf("the worktree is not locked:\n%s", got)
	}
	admin := run(t, g.Dir, "rev-parse", "--path-format=absolute", "--git-dir")
	if _, err := os.Stat(filepath.Join(admin, metaFile)); err != nil {
		t.Errorf("no metadata in the worktree's admin folder: %v", err)
	}
	// Opened from the group's checkout: the same repository, its main checkout on top.
	if r2 := open(t, g.Dir); r2.Top != r.Top || r2.CommonDir != r.CommonDir || r2.Key != r.Key {
		t.Errorf("Open(group's checkout) = %s %s %s, want %s %s %s", r2.Top, r2.CommonDir, r2.Key, r.Top, r.CommonDir, r.Key)
	}
	// Found again by a new Repo, as after a restart.
	groups, err := open(t, dir).Groups(context.Background())
	if err != nil || len(groups) != 1 {
		t.Fatalf("Groups = %+v, %v; want the group", groups, err)
	}
	got := groups[0]
	got.admin, got.Created = "", want.Created
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Groups()[0] = %+v, want %+v", got, want)
	}
}

// TestJoinIsRecorded: the group's record says whether a terminal ever joined it, so that a
// restarted app can tell a group whose last terminal closed while it was away (joined: it
// retires) from one made by CreateWorktree and still waiting for its first worker (it stays).
// Joining writes it in the same operation, for a group it makes and one that exists.
func TestJoinIsRecorded(t *testing.T) {
	dir := newRepo(t)
	root := t.TempDir()
	ctx := context.Background()
	do := func(op Op) Result {
		t.Helper()
		op.Dir, op.Root = dir, root
		res := Do(ctx, op)
		if res.Error != nil || res.Group == nil {
			t.Fatalf("%+v: %+v", op, res)
		}
		return res
	}
	joined := func() map[string]bool {
		t.Helper()
		groups, err := open(t, dir).Groups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, g := range groups {
			m[g.Name] = g.Joined
		}
		return m
	}

	made := do(Op{Op: OpCreate, Create: &CreateOptions{Name: "waiting"}})
	if made.Group.Joined || made.Joined {
		t.Errorf("CreateWorktree's group is joined: %+v", made)
	}
	if res := do(Op{Op: OpCreate, Create: &CreateOptions{Name: "spawned"}, Join: true}); !res.Group.Joined || res.Joined {
		t.Errorf("a Spawn that makes its group: %+v, want a new group, joined", res)
	}
	if got, want := joined(), map[string]bool{"waiting": false, "spawned": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the creates, joined = %v, want %v", got, want)
	}
	res := do(Op{Op: OpCreate, Create: &CreateOptions{Name: "waiting"}, Join: true})
	if !res.Joined || !res.Group.Joined {
		t.Errorf("a Spawn into the waiting group: %+v, want it found, joined", res)
	}
	if got, want := joined(), map[string]bool{"waiting": true, "spawned": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the join, joined = %v, want %v", got, want)
	}
	// The rest of the record is as it was.
	groups, err := open(t, dir).Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var g Group
	for _, g = range groups {
		if g.Name == "waiting" {
			break
		}
	}
	if g.Name != "waiting" || g.Port != made.Group.Port || g.BaseCommit != made.Group.BaseCommit || !g.Created.Equal(made.Group.Created) || !g.MadeBranch || g.Branch != "krad/waiting" {
		t.Errorf("after the join, the record is %+v; it was %+v", g, *made.Group)
	}
}

func TestCreateBadName(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	for _, name := range []string{"a/b", "..", "fix retry", "Fix", strings.Repeat("a", 41), "", "-x"} {
		if _, err := r.Create(context.Background(), CreateOptions{Name: name, Root: root}); !errors.Is(err, ErrBadName) {
			t.Errorf("Create(%q) = %v, want ErrBadName", name, err)
		}
	}
	for _, o := range []CreateOptions{{Base: "--output=/tmp/x"}, {Branch: "-b"}, {Base: "a b"}, {Branch: "a..b"}} {
		o.Name, o.Root = "x", root
		if _, err := r.Create(context.Background(), o); !errors.Is(err, ErrBadName) {
			t.Errorf("Create(%+v) = %v, want ErrBadName", o, err)
		}
	}
	noLeftovers(t, "a refused Create", before, look(t, r, root))
}

func isConflict(err error, what string) bool {
	var e *api.Error
	return errors.Is(err, ErrConflict) && errors.As(err, &e) && e.Code == api.CodeConflict && strings.Contains(e.Message, what)
}

func TestCreateConflicts(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	if _, err := r.Create(ctx, CreateOptions{Name: "one", Root: root}); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "branch", "krad/two")
	if err := os.MkdirAll(filepath.Join(root, r.Key, "three"), 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "worktree", "add", "-q", "--detach", filepath.Join(root, r.Key, "four"))
	run(t, dir, "branch", "taken")
	run(t, dir, "worktree", "add", "-q", filepath.Join(t.TempDir(), "other"), "taken")
	before := look(t, r, root)
	for _, tt := range []struct {
		o    CreateOptions
		what string
	}{
		{CreateOptions{Name: "one"}, "group one exists"},
		{CreateOptions{Name: "two"}, "branch krad/two exists"},
		{CreateOptions{Name: "three"}, "three exists"},
		{CreateOptions{Name: "four"}, "is a worktree"},
		{CreateOptions{Name: "five", Branch: "taken"}, "checked out in"},
		{CreateOptions{Name: "six", Branch: "main"}, "checked out in"},
	} {
		tt.o.Root = root
		if _, err := r.Create(ctx, tt.o); !isConflict(err, tt.what) {
			t.Errorf("Create(%+v) = %v, want a conflict saying %q", tt.o, err, tt.what)
		}
	}
	noLeftovers(t, "a refused Create", before, look(t, r, root))
}

func TestCreateContinuesABranch(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	base := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "checkout", "-q", "-b", "feature")
	write(t, dir, "f", "f\n")
	run(t, dir, "add", "f")
	run(t, dir, "commit", "-q", "-m", "f")
	tip := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "checkout", "-q", "main")
	r := open(t, dir)
	g, err := r.Create(ctx, CreateOptions{Name: "cont", Branch: "feature", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if g.Branch != "feature" || g.MadeBranch || g.BaseCommit != base || g.Head != tip {
		t.Errorf("Create = %+v, want branch feature, not made, base %s (where it meets main), head %s", g, base, tip)
	}
	if got := run(t, g.Dir, "rev-parse", "HEAD"); got != tip {
		t.Errorf("checkout HEAD = %s, want the branch's tip %s", got, tip)
	}
	if _, err := r.Create(ctx, CreateOptions{Name: "nope", Branch: "missing", Root: t.TempDir()}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Create with a missing branch = %v, want ErrNotFound", err)
	}
}

func TestCreateBase(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	first := run(t, dir, "rev-parse", "HEAD")
	write(t, dir, "second", "2\n")
	run(t, dir, "add", "second")
	run(t, dir, "commit", "-q", "-m", "second")
	run(t, dir, "tag", "v1", first)
	r := open(t, dir)
	root := t.TempDir()
	g, err := r.Create(ctx, CreateOptions{Name: "old", Base: "v1", Root: root})
	if err != nil || g.BaseCommit != first || run(t, g.Dir, "rev-parse", "HEAD") != first {
		t.Errorf("Create(base v1) = %+v, %v; want base and HEAD %s", g, err, first)
	}
	before := look(t, r, root)
	// Names git takes as revisions, of nothing here: a reflog entry past the reflog's end (git
	// dies there rather than answer none), an upstream or push branch the branch has not, a
	// file of a commit, a tree, a message no commit has.
	for _, base := range []string{"nosuch", "HEAD~5", strings.Repeat("0", 40), "HEAD@{5}", "main@{9}",
		"@{upstream}", "main@{push}", "HEAD:README", "HEAD^{tree}", ":/nosuchmessage"} {
		var e *api.Error
		_, err := r.Create(ctx, CreateOptions{Name: "x", Base: base, Root: root})
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Code != api.CodeNotFound || !strings.Contains(e.Message, "is no commit of the repository") {
			t.Errorf("Create(base %s) = %v, want not_found", base, err)
		}
		if _, err := r.CreateSet(ctx, "x", root, SetOptions{Count: 1, Base: base}); !errors.As(err, &e) || e.Code != api.CodeNotFound {
			t.Errorf("CreateSet(base %s) = %v, want not_found", base, err)
		}
	}
	noLeftovers(t, "a refused Create", before, look(t, r, root))
}

// TestCreateBaseWithoutReflog: HEAD@{1} of a repository whose reflog has one entry (its first
// commit: git dies on it rather than answer none), or that keeps no reflog at all, is not_found
// as other bases that name nothing, and leaves nothing.
func TestCreateBaseWithoutReflog(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	for _, how := range []string{"with one entry", "kept by none"} {
		if how == "kept by none" {
			if err := os.RemoveAll(filepath.Join(dir, ".git", "logs")); err != nil {
				t.Fatal(err)
			}
			run(t, dir, "config", "core.logAllRefUpdates", "false")
			before = look(t, r, root)
		}
		var e *api.Error
		if _, err := r.Create(ctx, CreateOptions{Name: "x", Base: "HEAD@{1}", Root: root}); !errors.As(err, &e) || e.Code != api.CodeNotFound || !errors.Is(err, ErrNotFound) {
			t.Errorf("Create(base HEAD@{1}), a reflog %s: %v, want not_found", how, err)
		}
		noLeftovers(t, "a refused Create", before, look(t, r, root))
	}
}

func TestCreateNoCommits(t *testing.T) {
	setup(t)
	dir := filepath.Join(t.TempDir(), "empty")
	run(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	r := open(t, dir)
	root := t.TempDir()
	_, err := r.Create(context.Background(), CreateOptions{Name: "x", Root: root})
	if !errors.Is(err, ErrNoCommits) || !strings.Contains(err.Error(), "commit first") {
		t.Errorf("Create in a repository with no commits = %v, want ErrNoCommits saying to commit first", err)
	}
	if out := run(t, dir, "for-each-ref"); out != "" {
		t.Errorf("refs left: %s", out)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("folders left under the root: %v", entries)
	}
}

func TestCreateDetachedHead(t *testing.T) {
	dir := newRepo(t)
	head := run(t, dir, "rev-parse", "HEAD")
	run(t, dir, "checkout", "-q", "--detach")
	g, err := open(t, dir).Create(context.Background(), CreateOptions{Name: "d", Root: t.TempDir()})
	if err != nil || g.BaseCommit != head || g.Branch != "krad/d" {
		t.Errorf("Create from a detached HEAD = %+v, %v; want krad/d from %s", g, err, head)
	}
}

func TestCreateDirtyMainCheckout(t *testing.T) {
	dir := newRepo(t)
	write(t, dir, "main.go", "package main // edited\n")
	write(t, dir, "new.txt", "untracked\n")
	write(t, dir, "staged.txt", "staged\n")
	run(t, dir, "add", "staged.txt")
	status := run(t, dir, "status", "--porcelain")
	index, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
	g, err := open(t, dir).Create(context.Background(), CreateOptions{Name: "clean", Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, g.Dir, "status", "--porcelain"); got != "" {
		t.Errorf("the group carries the main checkout's edits: %s", got)
	}
	if got := run(t, dir, "status", "--porcelain"); got != status {
		t.Errorf("the main checkout's status went from %q to %q", status, got)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, ".git", "index")); string(after) != string(index) {
		t.Errorf("the main checkout's index changed")
	}
}

// TestCreateRollsBack cancels Create's context after each of its steps, as a client that leaves
// mid-create does, for a new branch and for a kept branch continued (whose snapshot Create puts
// back): every time, nothing is left of the group, and the kept branch and its snapshot are as
// they were.
func TestCreateRollsBack(t *testing.T) {
	for _, tt := range []struct {
		what  string
		o     CreateOptions
		steps []string
	}{
		{"a new branch", CreateOptions{Name: "gone"}, []string{"branch", "worktree", "checkout", "included"}},
		{"a kept branch continued", CreateOptions{Name: "again", Branch: "krad/kept"}, []string{"branch", "worktree", "checkout", "restored", "included"}},
	} {
		t.Run(tt.what, func(t *testing.T) {
			r, g := newGroup(t, "kept")
			write(t, g.Dir, "README", "work kept in a snapshot\n")
			if ret, err := r.Retire(context.Background(), "kept"); err != nil || ret.Snapshot == "" || ret.BranchDeleted {
				t.Fatalf("Retire = %+v, %v; want the branch and a snapshot kept", ret, err)
			}
			root := t.TempDir()
			tt.o.Root = root
			before := look(t, r, root)
			for _, at := range tt.steps {
				ctx, cancel := context.WithCancel(context.Background())
				reached := false
				createStep = func(s string) {
					if s == at {
						reached = true
						cancel()
					}
				}
				_, err := r.Create(ctx, tt.o)
				createStep = nil
				cancel()
				if !reached || !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled after %s (reached: %v): Create = %v, want context.Canceled", at, reached, err)
				}
				noLeftovers(t, "cancelled after "+at, before, look(t, r, root))
			}
			// And the name is free again, the kept work there to continue.
			g, err := r.Create(context.Background(), tt.o)
			if err != nil {
				t.Fatalf("Create after the rollbacks: %v", err)
			}
			if tt.o.Branch != "" && g.Restored == "" {
				t.Errorf("Create after the rollbacks = %+v; want the snapshot restored", g)
			}
		})
	}
}

// TestCreateKilledMidway cancels Create while git is checking out a repository of some size, at
// several moments: whatever git had done, nothing is left.
func TestCreateKilledMidway(t *testing.T) {
	dir := newRepo(t)
	for i := range 2000 {
		write(t, dir, filepath.Join("pkg", string(rune('a'+i%26)), strings.Repeat("f", 1+i%7)+string(rune('a'+i/26%26))+string(rune('a'+i/676))), strings.Repeat("line\n", 50))
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "many files")
	r := open(t, dir)
	root := t.TempDir()
	before := look(t, r, root)
	for _, d := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		createStep = func(s string) {
			if s == "branch" {
				time.AfterFunc(d, cancel)
			}
		}
		_, err := r.Create(ctx, CreateOptions{Name: "killed", Root: root})
		createStep = nil
		cancel()
		if err == nil {
			t.Logf("cancelled %v after the branch: git was quicker", d)
			break // the group exists now: the later moments would be conflicts
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled %v after the branch: Create = %v, want context.Canceled", d, err)
		}
		noLeftovers(t, fmt.Sprintf("cancelled %v after the branch", d), before, look(t, r, root))
	}
}

// TestCreateSymlinkedRoot: a root reached through a symlink: the group's folder is the one git
// names, and Groups finds it.
func TestCreateSymlinkedRoot(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	g, err := r.Create(context.Background(), CreateOptions{Name: "sl", Root: link})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(real, r.Key, "sl"); g.Dir != want {
		t.Errorf("Dir = %s, want %s", g.Dir, want)
	}
	groups, err := r.Groups(context.Background())
	if err != nil || len(groups) != 1 || groups[0].Dir != g.Dir {
		t.Errorf("Groups = %+v, %v", groups, err)
	}
	if _, err := r.Create(context.Background(), CreateOptions{Name: "sl", Root: link}); !isConflict(err, "group sl exists") {
		t.Errorf("Create again = %v, want a conflict", err)
	}
}

// TestCreateDiskFull: a disk that fills while Create writes to it, the worktrees root's (git
// stops midway through the checkout) or the repository's (git stops writing the new worktree's
// index in the repository's admin folder): Create says a disk is full and what to do, and leaves
// nothing, there or in the repository.
func TestCreateDiskFull(t *testing.T) {
	testbin.NeedRoot(t, "mounting a small tmpfs")
	t.Run("worktrees root", func(t *testing.T) {
		dir := newRepo(t)
		write(t, dir, "big", strings.Repeat("0123456789abcdef", 64<<10)) // 1 MiB
		run(t, dir, "add", "big")
		run(t, dir, "commit", "-q", "-m", "big")
		root := smallDisk(t, "256k")
		createOnFullDisk(t, open(t, dir), root)
	})
	t.Run("repository", func(t *testing.T) {
		setup(t)
		// 2,000 files of one content: a small repository, an index of 200 KB.
		dir := filepath.Join(smallDisk(t, "16m"), "app")
		run(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
		for i := range 2000 {
			write(t, dir, fmt.Sprintf("pkg%02d/a-file-with-a-longer-name-%04d.txt", i/100, i), "same\n")
		}
		run(t, dir, "add", "-A")
		run(t, dir, "commit", "-q", "-m", "many files")
		fill(t, filepath.Join(filepath.Dir(dir), "filler"), 32<<10)
		createOnFullDisk(t, open(t, dir), t.TempDir())
	})
}

// createOnFullDisk runs Create where a disk fills, and checks what it says and that it leaves
// nothing.
func createOnFullDisk(t *testing.T, r *Repo, root string) {
	t.Helper()
	before := look(t, r, root)
	_, err := r.Create(context.Background(), CreateOptions{Name: "full", Root: root})
	var e *api.Error
	if !errors.Is(err, ErrDiskFull) || !errors.As(err, &e) || e.Code != api.CodeUnavailable ||
		!strings.Contains(err.Error(), "a disk is full") || !strings.Contains(err.Error(), "free space") {
		t.Errorf("Create on a full disk = %v; want ErrDiskFull, unavailable, saying a disk is full and to free space", err)
	} else {
		t.Logf("Create on a full disk: %v", err)
	}
	noLeftovers(t, "Create on a full disk", before, look(t, r, root))
}

// smallDisk mounts a tmpfs of size (as mount takes it: 256k, 24m) on a new folder, unmounted when
// the test ends, and returns the folder. Where mounting is refused (a container without
// CAP_SYS_ADMIN) the test is skipped, except under CI, where it fails: CI runs as root where it
// can mount.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		testbin.Cannot(t, fmt.Sprintf("cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?): %v: %s", err, bytes.TrimSpace(out)))
	}
	// Registered after t.TempDir's removal, so it runs first.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes the file at name until its disk is full, then gives back room bytes.
func fill(t *testing.T, name string, room int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for {
		k, err := f.Write(chunk)
		n += int64(k)
		if err != nil {
			break
		}
	}
	if err := f.Truncate(max(n-room, 0)); err != nil {
		t.Fatal(err)
	}
}

// TestCreateAtOnceGetsDistinctPorts: groups made at the same time each get a block of ports of
// their own.
func TestCreateAtOnceGetsDistinctPorts(t *testing.T) {
	dir := newRepo(t)
	r := open(t, dir)
	root := t.TempDir()
	const n = 6
	ports := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			g, err := r.Create(context.Background(), CreateOptions{Name: fmt.Sprintf("at-once-%d", i), Root: root})
			ports <- g.Port
			errs <- err
		}()
	}
	seen := map[int]bool{}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		p := <-ports
		if seen[p] {
			t.Errorf("two groups made at once got the ports from %d", p)
		}
		seen[p] = true
	}
}
