package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// setup needs git, and keeps the user's and the system's git config out of the test.
func setup(t testing.TB) {
	t.Helper()
	testbin.Need(t, "git", "git")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// run runs git in dir as a person would (with an identity) and returns its trimmed stdout.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// write writes a file under dir, making its folders.
func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository named app with one commit (README, main.go) on branch main.
func newRepo(t *testing.T) string {
	t.Helper()
	setup(t)
	dir := filepath.Join(t.TempDir(), "app")
	run(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	write(t, dir, "README", "hello\n")
	write(t, dir, "main.go", "package main\n\nfunc main() {}\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// open opens dir, failing the test on an error.
func open(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// refs lists every ref of the repository at dir, with its commit.
func refs(t *testing.T, dir string) string {
	t.Helper()
	return run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)")
}

// gitOutput runs git in dir and returns its combined output and error.
func gitOutput(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	return string(out), err
}
