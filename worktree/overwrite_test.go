package worktree

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// overwriteSet makes a repository whose .gitignore ignores .env, build/ and .cache/, with a
// tracked folder old/, and a set of one variant whose commit adds, over each of those, what a
// worker would: an .env of its own, a file build where the person builds, vendor/lib.go, a file
// link, .cache/x, docs/b.md and 25 files docs/f01…, and a file old in place of the folder; and
// edits README.
func overwriteSet(t *testing.T) (dir, root string, r *Repo, win Group) {
	t.Helper()
	dir = newRepo(t)
	write(t, dir, ".gitignore", ".env\nbuild/\n.cache/\n")
	write(t, dir, "old/x.txt", "tracked\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "ignores")
	run(t, dir, "config", "user.name", "Pat")
	run(t, dir, "config", "user.email", "pat@example.com")
	r = open(t, dir)
	root = t.TempDir()
	set, err := r.CreateSet(context.Background(), "env", root, SetOptions{Count: 1, Lead: "main:1"})
	if err != nil {
		t.Fatalf("CreateSet: %v", err)
	}
	win = set.Groups[0]
	for name, content := range map[string]string{
		".env": "SECRET=the worker's\n", "notes.txt": "the worker's notes\n", "vendor/lib.go": "package vendor\n",
		"build": "the worker's build file\n", "link": "the worker's file\n", ".cache/x": "the worker's cache\n",
		"docs/b.md": "the worker's doc\n", "README": "the worker's README\n",
	} {
		write(t, win.Dir, name, content)
	}
	for i := 1; i <= 25; i++ {
		write(t, win.Dir, fmt.Sprintf("docs/f%02d", i), "the worker's\n")
	}
	run(t, win.Dir, "rm", "-q", "-r", "old")
	write(t, win.Dir, "old", "a file now\n")
	run(t, win.Dir, "add", "-A")
	run(t, win.Dir, "add", "-f", ".env", ".cache/x")
	run(t, win.Dir, "commit", "-q", "-m", "the worker's")
	return dir, root, r, win
}

// TestPickWritesOverNothing: a pick (squash, apply, merge) that would write over anything that
// exists in the main checkout and is not what the pick replaces of its own commit — an ignored
// .env, an untracked file, a symbolic link, a folder (ignored or not, or symlinked) where the
// pick puts a file or through which it writes one, an untracked file in a tracked folder the pick
// replaces by a file, a file with changes not committed — is a conflict that names the paths and
// changes nothing: no file's bytes or time, not the index, HEAD or any ref, nothing behind a
// symbolic link. With all of them at once, the message names 20 and says how many more. With none
// of them, the pick goes in, past an untracked folder of the person's own that it writes into.
func TestPickWritesOverNothing(t *testing.T) {
	for _, how := range []string{api.PickSquash, api.PickApply, api.PickMerge} {
		t.Run(how, func(t *testing.T) {
			dir, root, r, win := overwriteSet(t)
			outside := t.TempDir() // what a symbolic link in the checkout points to
			write(t, outside, "keep.txt", "the person's, elsewhere\n")
			write(t, dir, "docs/a.md", "the person's own folder\n") // the pick writes docs/b.md beside it
			symlink := func(target, name string) func() {
				return func() {
					if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
			}
			hazards := []struct {
				what  string
				make  func()
				names []string // in the message, each as a word
			}{
				{"an ignored .env", func() { write(t, dir, ".env", "SECRET=the person's\n") }, []string{".env"}},
				{"an untracked file", func() { write(t, dir, "notes.txt", "the person's notes\n") }, []string{"notes.txt"}},
				{"a symlinked folder on the way", symlink(outside, "vendor"), []string{"vendor"}},
				{"an ignored symlinked folder on the way", symlink(outside, ".cache"), []string{".cache"}},
				{"an ignored folder where a file goes", func() { write(t, dir, "build/out.bin", "the person's build\n") }, []string{"build"}},
				{"a symbolic link where a file goes", symlink("README", "link"), []string{"link"}},
				{"a file on the way", func() {
					os.RemoveAll(filepath.Join(dir, "docs"))
					write(t, dir, "docs", "the person's file\n")
				}, []string{"docs"}},
				{"an untracked file in a folder the pick makes a file", func() { write(t, dir, "old/mine.txt", "the person's\n") }, []string{"old/mine.txt"}},
				{"an edit not committed", func() { write(t, dir, "README", "the person's edit\n") }, []string{"README"}},
			}
			clean := lookAt(t, dir)
			undo := func() {
				t.Helper()
				for _, name := range []string{".env", "notes.txt", "vendor", ".cache", "build", "link", "docs", "old/mine.txt"} {
					os.RemoveAll(filepath.Join(dir, name))
				}
				write(t, dir, "docs/a.md", "the person's own folder\n")
				run(t, dir, "checkout", "-q", "--", "README")
				if now := lookAt(t, dir); now.status != clean.status {
					t.Fatalf("the test's own undo left status %q, want %q", now.status, clean.status)
				}
			}
			refused := func(what string, want []string) string {
				t.Helper()
				run(t, dir, "status", "-s") // the index's times as a person's git status leaves them
				before, main, elsewhere := look(t, r, root), lookAt(t, dir), filesIn(t, outside)
				head := run(t, dir, "rev-parse", "HEAD")
				_, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: how, Message: "take it"})
				var ae *api.Error
				if !errors.As(err, &ae) || ae.Code != api.CodeConflict || ae.Reason != api.ReasonInTheWay || !errors.Is(err, ErrConflict) {
					t.Fatalf("%s: %v, want a conflict", what, err)
				}
				for _, name := range want {
					if !regexp.MustCompile(`(^|[ :,])` + regexp.QuoteMeta(name) + `([ ,;(]|$)`).MatchString(ae.Message) {
						t.Errorf("%s: the conflict says %q, which does not name %s", what, ae.Message, name)
					}
				}
				if !strings.Contains(ae.Message, "nothing was changed") {
					t.Errorf("%s: the conflict says %q, want it to say that nothing was changed", what, ae.Message)
				}
				noLeftovers(t, what, before, look(t, r, root)) // the winner committed all: no snapshot either
				main.same(t, what+", the main checkout", lookAt(t, dir))
				if now := filesIn(t, outside); !maps.Equal(now, elsewhere) {
					t.Errorf("%s: the folder a symbolic link points to holds %v, held %v", what, now, elsewhere)
				}
				if now := run(t, dir, "rev-parse", "HEAD"); now != head {
					t.Errorf("%s: HEAD moved from %s to %s", what, head, now)
				}
				return ae.Message
			}
			for _, h := range hazards {
				h.make()
				refused(h.what, h.names)
				undo()
			}

			// All at once, and the 25 files of docs/ besides: 20 named, and how many more.
			for _, h := range hazards {
				h.make()
			}
			os.Remove(filepath.Join(dir, "docs"))
			for i := 1; i <= 25; i++ {
				write(t, dir, fmt.Sprintf("docs/f%02d", i), "the person's\n")
			}
			msg := refused("everything at once", nil)
			m := regexp.MustCompile(`would write over (\d+) files .*: (.*) and (\d+) more;`).FindStringSubmatch(msg)
			if m == nil {
				t.Fatalf("all at once: %q, want the count, 20 paths and how many more", msg)
			}
			total, _ := strconv.Atoi(m[1])
			more, _ := strconv.Atoi(m[3])
			if shown := strings.Split(m[2], ", "); len(shown) != 20 || total != 8+25 || more != total-20 {
				t.Errorf("all at once: %d files, %d shown, %d more; want 33, 20 and 13: %q", total, len(shown), more, msg)
			}
			undo()

			// None: the pick goes in, and the person's own folder stays beside what it wrote.
			if _, err := r.Pick(context.Background(), PickOptions{Group: win.Name, How: how, Message: "take it"}); err != nil {
				t.Fatalf("the pick over a clean checkout: %v", err)
			}
			for name, want := range map[string]string{".env": "SECRET=the worker's\n", "docs/a.md": "the person's own folder\n", "docs/b.md": "the worker's doc\n", "old": "a file now\n", "vendor/lib.go": "package vendor\n"} {
				if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
					t.Errorf("after the pick, %s holds %q (%v), want %q", name, got, err, want)
				}
			}
		})
	}
}
