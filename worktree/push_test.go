package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/gittest"
)

// pushRepo makes a repository with a bare remote, origin, that has its main, and a group g of it
// with a commit of its own.
func pushRepo(t *testing.T) (r *Repo, g Group, bare string) {
	t.Helper()
	r, g = syncRepo(t)
	bare = filepath.Join(t.TempDir(), "remote.git")
	run(t, r.Top, "init", "-q", "--bare", bare)
	run(t, r.Top, "remote", "add", "origin", bare)
	run(t, r.Top, "push", "-q", "origin", "main")
	commitIn(t, g.Dir, "the worker's", map[string]string{"a.txt": "a\n"})
	return r, g, bare
}

func doPush(r *Repo, o PushOptions) Result {
	if o.Group == "" {
		o.Group = "g"
	}
	return Do(context.Background(), Op{Op: OpPush, Dir: r.Top, Push: &o})
}

// remoteRef is ref's commit in the bare repository, "" when it has none.
func remoteRef(bare, ref string) string {
	out, err := exec.Command("git", "-C", bare, "rev-parse", "--verify", "-q", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestPush: the group's branch goes to origin, as it is; again, it is up to date; what is not
// committed is counted, not pushed.
func TestPush(t *testing.T) {
	r, g, bare := pushRepo(t)
	tip := run(t, r.Top, "rev-parse", "refs/heads/krad/g")
	write(t, g.Dir, "wip.txt", "not committed\n")
	res := doPush(r, PushOptions{})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	want := Pushed{Group: "g", Branch: "krad/g", Remote: "origin", Commit: tip, Uncommitted: 1}
	if *res.Pushed != want {
		t.Errorf("Pushed = %+v, want %+v", *res.Pushed, want)
	}
	if got := remoteRef(bare, "refs/heads/krad/g"); got != tip {
		t.Errorf("the remote's krad/g is %q, want %s", got, tip)
	}
	if res := doPush(r, PushOptions{}); res.Error != nil || !res.Pushed.UpToDate {
		t.Errorf("a second push = %+v, want up to date", res)
	}
}

// TestPushRejected: a remote branch with commits the group's lacks is a conflict, and the remote
// keeps them.
func TestPushRejected(t *testing.T) {
	r, g, bare := pushRepo(t)
	other := filepath.Join(t.TempDir(), "other")
	run(t, r.Top, "clone", "-q", bare, other)
	commitIn(t, other, "someone else's", map[string]string{"z.txt": "z\n"})
	run(t, other, "push", "-q", "origin", "HEAD:refs/heads/krad/g")
	theirs := remoteRef(bare, "refs/heads/krad/g")
	res := doPush(r, PushOptions{})
	if res.Error == nil || res.Error.Code != api.CodeConflict || !errors.Is(res.Error, ErrConflict) || !strings.Contains(res.Error.Message, "git -C "+g.Dir+" pull origin krad/g") {
		t.Fatalf("Push = %+v, want a conflict saying how to bring the commits in", res)
	}
	if got := remoteRef(bare, "refs/heads/krad/g"); got != theirs {
		t.Errorf("the remote's krad/g moved to %s", got)
	}
}

// TestPushRemote: which remote a push takes, and the refusals.
func TestPushRemote(t *testing.T) {
	r, _, bare := pushRepo(t)
	if res := doPush(r, PushOptions{Remote: "nope"}); res.Error == nil || res.Error.Code != api.CodeNotFound || !strings.Contains(res.Error.Message, "its remotes: origin") {
		t.Errorf("an unknown remote: %+v", res)
	}
	if res := doPush(r, PushOptions{Remote: "--mirror"}); res.Error == nil || res.Error.Code != api.CodeNotFound {
		t.Errorf("a remote named like an option: %+v", res)
	}
	run(t, r.Top, "remote", "rename", "origin", "up")
	run(t, r.Top, "remote", "add", "mirror", t.TempDir())
	if res := doPush(r, PushOptions{}); res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "name one") {
		t.Errorf("two remotes, no origin: %+v", res)
	}
	run(t, r.Top, "config", "branch.main.remote", "up")
	if res := doPush(r, PushOptions{}); res.Error != nil || res.Pushed.Remote != "up" || remoteRef(bare, "refs/heads/krad/g") == "" {
		t.Errorf("the main branch's remote: %+v", res)
	}
	run(t, r.Top, "remote", "remove", "up")
	run(t, r.Top, "remote", "remove", "mirror")
	if res := doPush(r, PushOptions{}); res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "git remote add") {
		t.Errorf("no remote: %+v", res)
	}
}

// TestPushSaysNoPassword: a remote's URL that holds a password never reaches the error.
func TestPushSaysNoPassword(t *testing.T) {
	r, _, _ := pushRepo(t)
	run(t, r.Top, "remote", "set-url", "origin", "http://me:s3cret-in-url@127.0.0.1:1/r.git")
	res := doPush(r, PushOptions{})
	if res.Error == nil || strings.Contains(res.Error.Message, "s3cret") || !strings.Contains(res.Error.Message, "127.0.0.1:1") {
		t.Errorf("Push = %+v: want an error without the password", res)
	}
}

// TestPR: a pull request is opened with gh, in the group's checkout, every name as one word of
// its argv (a title that starts with - included), after the push; its address is the answer.
func TestPR(t *testing.T) {
	r, g, bare := pushRepo(t)
	gh := gittest.FakeGH(t, "https://github.com/me/app/pull/7", "")
	res := doPush(r, PushOptions{PR: &PROptions{Title: "--web; rm -rf ~", Draft: true}})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if res.Pushed.PR != "https://github.com/me/app/pull/7" || res.Pushed.Base != "main" || remoteRef(bare, "refs/heads/krad/g") == "" {
		t.Errorf("Pushed = %+v", res.Pushed)
	}
	want := []string{"pr", "create", "--head=krad/g", "--base=main", "--title=--web; rm -rf ~", "--body=- the worker's\n\nFrom krad-ade's group g.", "--draft"}
	if got := gh.Ran(t); !slices.Equal(got, want) {
		t.Errorf("gh ran with %q, want %q", got, want)
	}
	if where := gh.Where(); where != g.Dir {
		t.Errorf("gh ran in %q, want the group's checkout %s", where, g.Dir)
	}
	gh.Forget()
	if res := doPush(r, PushOptions{PR: &PROptions{}}); res.Error != nil {
		t.Fatal(res.Error)
	}
	if got := gh.Ran(t); !slices.Equal(got, []string{"pr", "create", "--head=krad/g", "--base=main", "--fill"}) {
		t.Errorf("without a title gh ran with %q, want --fill", got)
	}
}

// TestPRFails: gh's own failure is said, its words escaped; one for a pull request that exists
// is a conflict.
func TestPRFails(t *testing.T) {
	r, _, _ := pushRepo(t)
	gittest.FakeGH(t, "", "a pull request for branch \"krad/g\" into branch \"main\" already exists:")
	res := doPush(r, PushOptions{PR: &PROptions{}})
	if res.Error == nil || res.Error.Code != api.CodeConflict || !strings.Contains(res.Error.Message, "is pushed, but gh pr create failed") || !strings.Contains(res.Error.Message, "already exists") {
		t.Errorf("Push = %+v, want a conflict saying gh's words", res)
	}
}

// TestPRWithoutGH: where gh is not installed, a pull request is unavailable with the hint to
// install it, and nothing is pushed.
func TestPRWithoutGH(t *testing.T) {
	r, _, bare := pushRepo(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(gitPath, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	res := doPush(r, PushOptions{PR: &PROptions{Title: "t"}})
	if res.Error == nil || res.Error.Code != api.CodeUnavailable || !strings.Contains(res.Error.Message, GHInstallHint) || !strings.Contains(res.Error.Message, "nothing was pushed") {
		t.Fatalf("Push = %+v, want unavailable with the hint", res)
	}
	if got := remoteRef(bare, "refs/heads/krad/g"); got != "" {
		t.Errorf("the branch was pushed (%s) though the pull request could not be opened", got)
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"fatal: unable to access 'https://me:tok@github.com/x/': 403": "fatal: unable to access 'https://…@github.com/x/': 403",
		"To http://ghp_abc@h/r.git":                                   "To http://…@h/r.git",
		"git@github.com:me/app.git":                                   "git@github.com:me/app.git",
		"no url here: a@b":                                            "no url here: a@b",
		"ssh://u@h:22/x and ftp://x":                                  "ssh://…@h:22/x and ftp://x",
	} {
		if got := redactURLs(in); got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
