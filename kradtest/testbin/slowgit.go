package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// SlowGit is a folder holding a git that is the real one, except that `git worktree add` waits
// until it is killed (a minute at most, then fails), after making the file "waiting" beside
// itself: a Create that hangs in git after it made its folder, for a cancel to interrupt. Put the
// folder first on the PATH of the process under test.
func SlowGit(t testing.TB) string {
	t.Helper()
	real := Need(t, "git", "git")
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"case \" $* \" in *\" worktree add \"*) : >\"$(dirname \"$0\")/waiting\"; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; exit 1;; esac\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FailingGit is a folder holding a git that fails, saying "fatal: injected failure" and exiting
// 128, when one of its arguments is word (remove, commit-tree), and is the real git otherwise: a
// fault injected into one step. Put the folder first on the PATH of the process under test.
func FailingGit(t testing.TB, word string) string {
	t.Helper()
	real := Need(t, "git", "git")
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"for a; do if [ \"$a\" = '" + word + "' ]; then echo 'fatal: injected failure' >&2; exit 128; fi; done\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
