package worktree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/krad-ade/krad/api"
)

// newGroup makes a repository and a group in it.
func newGroup(t *testing.T, name string) (*Repo, Group) {
	t.Helper()
	dir := newRepo(t)
	write(t, dir, ".gitignore", "*.log\n")
	write(t, dir, "old.txt", strings.Repeat("a line that stays the same\n", 20))
	write(t, dir, "logo.bin", "\x00\x01\x02binary\x00")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "more")
	r := open(t, dir)
	g, err := r.Create(context.Background(), CreateOptions{Name: name, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return r, g
}

// applyAt checks out commit in a new worktree, applies patch there with git apply, and returns
// the folder.
func applyAt(t *testing.T, repo, commit, patch string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "check")
	run(t, repo, "worktree", "add", "-q", "--detach", dir, commit)
	cmd := exec.Command("git", "-C", dir, "apply", "--index", "-")
	cmd.Stdin = strings.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, patch)
	}
	return dir
}

func TestChanges(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "work")
	d := g.Dir
	// A commit, a staged file, an unstaged edit, an untracked file, an ignored one, a rename,
	// a binary edit, names with a newline and with bytes that are not UTF-8.
	write(t, d, "main.go", "package main\n\nfunc main() { println(1) }\n")
	run(t, d, "commit", "-q", "-am", "print 1")
	write(t, d, "staged.go", "package main\n")
	run(t, d, "add", "staged.go")
	write(t, d, "README", "hello\nworld\n")
	write(t, d, "untracked.txt", "new\n")
	write(t, d, "build.log", "ignored\n")
	run(t, d, "mv", "old.txt", "new.txt")
	write(t, d, "logo.bin", "\x00\x01\x02binary, changed\x00")
	write(t, d, "two\nlines", "newline in the name\n")
	write(t, d, "caf\xe9", "latin-1 name\n")

	c, err := r.Changes(ctx, "work", ChangesOptions{Binary: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Commits) != 1 || c.Commits[0].Subject != "print 1" || c.Base != g.BaseCommit {
		t.Errorf("Commits = %+v, Base = %s; want the one commit since %s", c.Commits, c.Base, g.BaseCommit)
	}
	want := []File{
		{Path: "README", Status: "M", Added: 1},
		{Path: "caf\xe9", Status: "A", Added: 1},
		{Path: "logo.bin", Status: "M", Binary: true},
		{Path: "main.go", Status: "M", Added: 1, Deleted: 1},
		{Path: "new.txt", OldPath: "old.txt", Status: "R"},
		{Path: "staged.go", Status: "A", Added: 1},
		{Path: "two\nlines", Status: "A", Added: 1},
		{Path: "untracked.txt", Status: "A", Added: 1},
	}
	if !slices.Equal(c.Files, want) {
		t.Errorf("Files =\n%+v\nwant\n%+v", c.Files, want)
	}
	// The patch is a real patch: applied at the base, it gives the group's files.
	check := applyAt(t, r.Top, c.Base, c.Patch)
	for _, f := range want {
		got, err1 := os.ReadFile(filepath.Join(check, f.Path))
		wantData, err2 := os.ReadFile(filepath.Join(d, f.Path))
		if err1 != nil || err2 != nil || !bytes.Equal(got, wantData) {
			t.Errorf("%q after git apply: %q (%v), want %q (%v)", f.Path, got, err1, wantData, err2)
		}
	}
	if _, err := os.Stat(filepath.Join(check, "old.txt")); err == nil {
		t.Errorf("old.txt is still there after the rename was applied")
	}

	// Without Binary: the binary file is left out, and named.
	c, err = r.Changes(ctx, "work", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Files {
		if (f.LeftOut == "binary") != (f.Path == "logo.bin") {
			t.Errorf("%q: LeftOut %q", f.Path, f.LeftOut)
		}
	}
	if strings.Contains(c.Patch, "logo.bin") {
		t.Errorf("the patch holds the binary file without Binary")
	}
	// Stat: the list, no patch.
	c, err = r.Changes(ctx, "work", ChangesOptions{Stat: true})
	if err != nil || c.Patch != "" || len(c.Files) != len(want) {
		t.Errorf("Changes(Stat) = %d files, patch %d bytes, %v; want %d files, no patch", len(c.Files), len(c.Patch), err, len(want))
	}
	// Paths: the patch of those only; the list still whole.
	c, err = r.Changes(ctx, "work", ChangesOptions{Paths: []string{"README", "new.txt"}})
	if err != nil || len(c.Files) != len(want) {
		t.Fatalf("Changes(Paths) = %+v, %v", c.Files, err)
	}
	for _, f := range c.Files {
		asked := f.Path == "README" || f.Path == "new.txt"
		if asked == (f.LeftOut == "not asked for") {
			t.Errorf("Changes(Paths): %q LeftOut %q", f.Path, f.LeftOut)
		}
	}
	if !strings.Contains(c.Patch, "rename to new.txt") || !strings.Contains(c.Patch, "+world") || strings.Contains(c.Patch, "main.go") {
		t.Errorf("Changes(Paths) patch:\n%s", c.Patch)
	}
}

func TestChangesCap(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "big")
	for _, n := range []string{"a", "b", "c", "d"} {
		write(t, g.Dir, n+".txt", strings.Repeat(n+" some text\n", 100)) // about 1.2 KB of patch each
	}
	write(t, g.Dir, "huge.txt", strings.Repeat("x", 5000)+"\n")
	c, err := r.Changes(ctx, "big", ChangesOptions{MaxPatch: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Patch) > 3000 {
		t.Errorf("the patch has %d bytes, more than the cap", len(c.Patch))
	}
	var in, out []string
	for _, f := range c.Files {
		switch f.LeftOut {
		case "":
			in = append(in, f.Path)
		case "too large":
			out = append(out, f.Path)
		default:
			t.Errorf("%s left out: %q", f.Path, f.LeftOut)
		}
	}
	if !slices.Equal(in, []string{"a.txt", "b.txt"}) || !slices.Equal(out, []string{"c.txt", "d.txt", "huge.txt"}) {
		t.Errorf("in the patch %v, left out %v; want a, b in and the rest out", in, out)
	}
	applyAt(t, r.Top, c.Base, c.Patch) // whole files only: it applies
}

// TestChangesIndexUntouched: Changes never writes the worker's index (nor the main checkout's),
// whose bytes and modification time stay the same.
func TestChangesIndexUntouched(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "idx")
	write(t, g.Dir, "staged.txt", "s\n")
	run(t, g.Dir, "add", "staged.txt")
	write(t, g.Dir, "README", "edited\n")
	write(t, r.Top, "README", "edited in main\n")
	// Make the files' stat data look racy to git, so that a git that refreshes the index
	// would want to write it.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(g.Dir, "main.go"), old, old)
	for _, tt := range []struct{ group, index string }{
		{"idx", run(t, g.Dir, "rev-parse", "--path-format=absolute", "--git-path", "index")},
		{"", filepath.Join(r.CommonDir, "index")},
	} {
		before, _ := os.ReadFile(tt.index)
		fi1, err := os.Stat(tt.index)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		c, err := r.Changes(ctx, tt.group, ChangesOptions{})
		if err != nil || len(c.Files) == 0 {
			t.Fatalf("Changes(%q) = %+v, %v", tt.group, c.Files, err)
		}
		after, _ := os.ReadFile(tt.index)
		fi2, _ := os.Stat(tt.index)
		if !bytes.Equal(before, after) || !fi1.ModTime().Equal(fi2.ModTime()) {
			t.Errorf("Changes(%q) changed %s (mtime %v → %v)", tt.group, tt.index, fi1.ModTime(), fi2.ModTime())
		}
		if _, err := os.Stat(tt.index + ".lock"); err == nil {
			t.Errorf("Changes(%q) left %s.lock", tt.group, tt.index)
		}
	}
}

func TestChangesMainCheckout(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	write(t, dir, "README", "hello\nagain\n")
	write(t, dir, "new", "n\n")
	r := open(t, dir)
	c, err := r.Changes(ctx, "", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	head := run(t, dir, "rev-parse", "HEAD")
	want := []File{{Path: "README", Status: "M", Added: 1}, {Path: "new", Status: "A", Added: 1}}
	if c.Base != head || len(c.Commits) != 0 || !slices.Equal(c.Files, want) {
		t.Errorf("Changes(\"\") = base %s, %+v, %+v; want base HEAD %s, %+v", c.Base, c.Commits, c.Files, head, want)
	}

	// No commits yet: everything is new.
	setup(t)
	empty := filepath.Join(t.TempDir(), "empty")
	run(t, filepath.Dir(empty), "init", "-q", empty)
	write(t, empty, "a", "a\n")
	c, err = open(t, empty).Changes(ctx, "", ChangesOptions{})
	if err != nil || !slices.Equal(c.Files, []File{{Path: "a", Status: "A", Added: 1}}) {
		t.Errorf("Changes in a repository with no commits = %+v, %v", c.Files, err)
	}
}

func TestChangesErrors(t *testing.T) {
	r, g := newGroup(t, "gone")
	var e *api.Error
	if _, err := r.Changes(context.Background(), "nosuch", ChangesOptions{}); !errors.Is(err, ErrNotFound) || !errors.As(err, &e) || e.Code != api.CodeNotFound {
		t.Errorf("Changes(nosuch) = %v, want not_found", err)
	}
	if _, err := r.Changes(context.Background(), "Bad/Name", ChangesOptions{}); !errors.Is(err, ErrBadName) {
		t.Errorf("Changes(Bad/Name) = %v, want ErrBadName", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := r.Changes(ctx, "gone", ChangesOptions{}); err == nil {
		t.Errorf("Changes with its context cancelled = %+v, nil; want an error, never no changes", c)
	}
	// The worker deleted its own folder.
	if err := os.RemoveAll(g.Dir); err != nil {
		t.Fatal(err)
	}
	_, err := r.Changes(context.Background(), "gone", ChangesOptions{})
	if !errors.Is(err, ErrFolderGone) || !strings.Contains(err.Error(), g.Dir) {
		t.Errorf("Changes of a group whose folder is gone = %v, want ErrFolderGone naming the folder", err)
	}
}

// TestChangesWhileCommitting: the agent commits in a loop while Changes runs again and again:
// every answer is whole (each file the agent wrote is there, with its count), and none of the
// agent's commits fails for a lock of ours.
func TestChangesWhileCommitting(t *testing.T) {
	r, g := newGroup(t, "loop")
	const n = 25
	done := make(chan error, 1)
	scratch := t.TempDir()
	go func() {
		for i := range n {
			// Each file appears whole (written beside, then renamed in), as an editor saves:
			// a Changes that saw it half-written would count it right, with no line.
			name := "f" + strings.Repeat("x", i%5) + string(rune('a'+i))
			if err := os.WriteFile(filepath.Join(scratch, name), []byte("line\n"), 0o644); err != nil {
				done <- err
				return
			}
			if err := os.Rename(filepath.Join(scratch, name), filepath.Join(g.Dir, name)); err != nil {
				done <- err
				return
			}
			for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "step"}} {
				cmd := exec.Command("git", append([]string{"-C", g.Dir}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
				if out, err := cmd.CombinedOutput(); err != nil {
					done <- errors.New("the agent's git " + args[0] + " failed: " + string(out))
					return
				}
			}
		}
		done <- nil
	}()
	calls := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if calls < 3 {
				t.Logf("only %d calls of Changes ran during the commits", calls)
			}
			c, err := r.Changes(context.Background(), "loop", ChangesOptions{})
			if err != nil || len(c.Files) != n || len(c.Commits) != n {
				t.Errorf("Changes after the loop = %d files, %d commits, %v; want %d of each", len(c.Files), len(c.Commits), err, n)
			}
			return
		default:
		}
		c, err := r.Changes(context.Background(), "loop", ChangesOptions{})
		calls++
		if err != nil {
			t.Fatalf("Changes while the agent commits: %v", err)
		}
		for _, f := range c.Files {
			if f.Status != "A" || f.Added != 1 || f.LeftOut != "" {
				t.Errorf("Changes while the agent commits: %+v", f)
			}
		}
		if strings.Count(c.Patch, "diff --git ") != len(c.Files) {
			t.Errorf("the patch has %d files, the list %d", strings.Count(c.Patch, "diff --git "), len(c.Files))
		}
	}
}

// TestChangesLargeFile: a 50 MB file is counted in the list and left out of the patch, whose
// other files are there.
func TestChangesLargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MB")
	}
	r, g := newGroup(t, "large")
	write(t, g.Dir, "big.txt", strings.Repeat("fifty megabytes of lines, this is one of them.\n", 50<<20/48))
	write(t, g.Dir, "README", "small\n")
	c, err := r.Changes(context.Background(), "large", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []File{{Path: "README", Status: "M", Added: 1, Deleted: 1}, {Path: "big.txt", Status: "A", Added: 50 << 20 / 48, LeftOut: "too large"}}
	if !slices.Equal(c.Files, want) {
		t.Errorf("Files = %+v, want %+v", c.Files, want)
	}
	if len(c.Patch) > DefaultMaxPatch || !strings.Contains(c.Patch, "+small") {
		t.Errorf("the patch has %d bytes; want README's patch only", len(c.Patch))
	}
}

// TestChangesAssumeUnchanged: a file marked assume-unchanged in the worker's index is still seen
// when it changes (and the mark stays in the worker's index).
func TestChangesAssumeUnchanged(t *testing.T) {
	r, g := newGroup(t, "au")
	run(t, g.Dir, "update-index", "--assume-unchanged", "README")
	write(t, g.Dir, "README", "changed behind git's back\n")
	c, err := r.Changes(context.Background(), "au", ChangesOptions{})
	if err != nil || !slices.Equal(c.Files, []File{{Path: "README", Status: "M", Added: 1, Deleted: 1}}) {
		t.Errorf("Changes = %+v, %v; want README modified", c.Files, err)
	}
	if got := run(t, g.Dir, "ls-files", "-v", "README"); got != "h README" {
		t.Errorf("the worker's index: %q, want the mark kept", got)
	}
}

// TestChangesRacilyCleanFile: a file rewritten, same size, in the same instant as the worker's
// index was written (as an agent does right after its checkout) is seen as changed. Git can tell
// such a file from an unchanged one only by its content, and knows to look because the file is
// not older than the index; a copy of the index with a newer time of its own would hide it, from
// Changes and from the snapshot Retire keeps.
func TestChangesRacilyCleanFile(t *testing.T) {
	r, g := newGroup(t, "racy")
	// The inode, size and times then match the index's record; the content alone differs.
	run(t, g.Dir, "config", "core.trustctime", "false")
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	readme := filepath.Join(g.Dir, "README")
	if err := os.Chtimes(readme, then, then); err != nil {
		t.Fatal(err)
	}
	run(t, g.Dir, "update-index", "--refresh") // the index records README's new time
	index := run(t, g.Dir, "rev-parse", "--path-format=absolute", "--git-path", "index")
	write(t, g.Dir, "README", "hallo\n") // the same size as "hello\n"
	for _, p := range []string{readme, index} {
		if err := os.Chtimes(p, then, then); err != nil {
			t.Fatal(err)
		}
	}
	if got := run(t, g.Dir, "--no-optional-locks", "status", "--porcelain"); got != "M README" {
		t.Fatalf("git status = %q, want README modified: the test did not make the case it means to", got)
	}
	c, err := r.Changes(context.Background(), "racy", ChangesOptions{Stat: true})
	if err != nil || !slices.Equal(c.Files, []File{{Path: "README", Status: "M", Added: 1, Deleted: 1}}) {
		t.Errorf("Changes = %+v, %v; want README modified", c.Files, err)
	}
	ret, err := r.Retire(context.Background(), "racy")
	if err != nil || ret.Snapshot == "" {
		t.Fatalf("Retire = %+v, %v; want the edit kept in a snapshot", ret, err)
	}
	if got := run(t, r.Top, "show", ret.SnapshotCommit+":README"); got != "hallo" {
		t.Errorf("the snapshot's README = %q, want the edit", got)
	}
}

// leftOut maps each file's path to why its patch is left out ("" when it is in the patch), and
// checks that the patch holds exactly the files that are not left out.
func leftOut(t *testing.T, c Changes) map[string]string {
	t.Helper()
	m := map[string]string{}
	in := 0
	for _, f := range c.Files {
		m[f.Path] = f.LeftOut
		if f.LeftOut == "" {
			in++
		}
		if strconv.Quote(f.Path) != `"`+f.Path+`"` {
			continue // git quotes the name in the patch
		}
		if found := strings.Contains(c.Patch, "diff --git a/"+f.Path+" "); found != (f.LeftOut == "") {
			t.Errorf("%q: LeftOut %q, but in the patch: %v", f.Path, f.LeftOut, found)
		}
	}
	if n := strings.Count(c.Patch, "diff --git "); n != in {
		t.Errorf("the patch has %d files' patches, and %d files are not left out", n, in)
	}
	return m
}

// TestChangesFileCap: a file whose own patch passes the per-file cap is left out even when the
// total has room; named in Paths, it comes whole, up to the total cap; a folder that holds it
// does not name it.
func TestChangesFileCap(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "cap")
	write(t, g.Dir, "small.txt", "small\n")
	write(t, g.Dir, "data/big.txt", strings.Repeat("a line of data\n", 1000)) // about 16 KB of patch
	write(t, g.Dir, "data/tiny.txt", "tiny\n")
	for _, tt := range []struct {
		o    ChangesOptions
		want map[string]string
	}{
		{ChangesOptions{MaxFilePatch: 4096},
			map[string]string{"small.txt": "", "data/big.txt": "too large", "data/tiny.txt": ""}},
		{ChangesOptions{MaxFilePatch: 4096, Paths: []string{"data/big.txt"}},
			map[string]string{"small.txt": "not asked for", "data/big.txt": "", "data/tiny.txt": "not asked for"}},
		{ChangesOptions{MaxFilePatch: 4096, Paths: []string{"data"}},
			map[string]string{"small.txt": "not asked for", "data/big.txt": "too large", "data/tiny.txt": ""}},
		{ChangesOptions{MaxFilePatch: 4096, MaxPatch: 8192, Paths: []string{"data/big.txt", "small.txt"}},
			map[string]string{"small.txt": "", "data/big.txt": "too large", "data/tiny.txt": "not asked for"}},
		{ChangesOptions{MaxFilePatch: 20000},
			map[string]string{"small.txt": "", "data/big.txt": "", "data/tiny.txt": ""}},
	} {
		c, err := r.Changes(ctx, "cap", tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := leftOut(t, c); !maps.Equal(got, tt.want) {
			t.Errorf("Changes(%+v): left out %v, want %v", tt.o, got, tt.want)
		}
		for _, f := range c.Files {
			if f.Path == "data/big.txt" && f.Added != 1000 {
				t.Errorf("Changes(%+v): big.txt counts %d added lines, want 1000 whether its patch is there or not", tt.o, f.Added)
			}
		}
		applyAt(t, r.Top, c.Base, c.Patch) // cut between files only
	}

	// The default per-file cap: a file whose patch is past it is left out, with the total far
	// from full.
	write(t, g.Dir, "data/big.txt", strings.Repeat("x", DefaultMaxFilePatch)+"\n")
	c, err := r.Changes(ctx, "cap", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"small.txt": "", "data/big.txt": "too large", "data/tiny.txt": ""}
	if got := leftOut(t, c); !maps.Equal(got, want) {
		t.Errorf("Changes with the default caps: left out %v, want %v", got, want)
	}
}

// TestChangesGenerated: lockfiles at any depth and the files the repository's gitattributes mark
// linguist-generated are listed with their counts, their patch left out unless named in Paths;
// the attribute unset makes a lockfile an ordinary file again.
func TestChangesGenerated(t *testing.T) {
	ctx := context.Background()
	r, g := newGroup(t, "gen")
	write(t, g.Dir, ".gitattributes", "*.pb.go linguist-generated\nvendored/** linguist-generated=true\nreviewed/go.sum -linguist-generated\n")
	files := map[string]string{
		"package-lock.json":       "",
		"web/app/yarn.lock":       "",
		"go.sum":                  "",
		"svc/Cargo.lock":          "",
		"api/v1/api.pb.go":        "",
		"api/v1/two\nlines.pb.go": "", // git's -z output keeps the newline
		"api/v1/caf\xe9.pb.go":    "",
		"vendored/lib/x.js":       "",
		"reviewed/go.sum":         "",
		"my-package-lock.json":    "", // not a lockfile's name
		"main.go":                 "",
	}
	for p := range files {
		write(t, g.Dir, p, "content of "+p+"\n")
	}
	c, err := r.Changes(ctx, "gen", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{".gitattributes": ""}
	for p := range files {
		want[p] = "generated"
	}
	for _, p := range []string{"reviewed/go.sum", "my-package-lock.json", "main.go"} {
		want[p] = ""
	}
	if got := leftOut(t, c); !maps.Equal(got, want) {
		t.Errorf("left out:\n%v\nwant\n%v", got, want)
	}
	for _, f := range c.Files {
		if f.Added < 1 {
			t.Errorf("%q: %d lines added; the counts of a generated file stay", f.Path, f.Added)
		}
	}
	applyAt(t, r.Top, c.Base, c.Patch)

	// Named by path, a generated file's patch comes; a folder that holds one does not name it.
	c, err = r.Changes(ctx, "gen", ChangesOptions{Paths: []string{"go.sum", "api/v1/caf\xe9.pb.go", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	got := leftOut(t, c)
	for p, want := range map[string]string{"go.sum": "", "api/v1/caf\xe9.pb.go": "", "web/app/yarn.lock": "generated", "main.go": "not asked for"} {
		if got[p] != want {
			t.Errorf("Changes(Paths): %q left out %q, want %q", p, got[p], want)
		}
	}
	// Stat: the list only, no attribute asked for.
	c, err = r.Changes(ctx, "gen", ChangesOptions{Stat: true})
	if err != nil || len(c.Files) != len(want) {
		t.Errorf("Changes(Stat) = %d files, %v; want %d", len(c.Files), err, len(want))
	}
	for _, f := range c.Files {
		if f.LeftOut != "" {
			t.Errorf("Changes(Stat): %q left out %q; with no patch asked for, nothing is", f.Path, f.LeftOut)
		}
	}
}

// TestChangesJSONOfAGroup: a real group's changes, with a path and a commit subject in no
// encoding and a patch of such bytes, go through JSON and come back the same, and the JSON reads
// back to the same bytes.
func TestChangesJSONOfAGroup(t *testing.T) {
	r, g := newGroup(t, "json")
	write(t, g.Dir, "caf\xe9", "caf\xe9\n")
	run(t, g.Dir, "add", "-A")
	run(t, g.Dir, "commit", "-q", "-m", "caf\xe9 au lait")
	c, err := r.Changes(context.Background(), "json", ChangesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// git itself may take the bytes for Latin-1 ("café"); either way the subject is UTF-8.
	if len(c.Commits) != 1 || !utf8.ValidString(c.Commits[0].Subject) || !strings.HasSuffix(c.Commits[0].Subject, " au lait") {
		t.Errorf("Commits = %+v, want the subject in UTF-8", c.Commits)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Changes
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("Changes %+v came back from JSON as %+v, %v", c, back, err)
	}
	if again, _ := json.Marshal(back); !bytes.Equal(again, data) {
		t.Errorf("the JSON %s came back as %s", data, again)
	}
}
