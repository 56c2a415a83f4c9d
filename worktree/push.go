package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/capped"
	"github.com/krad-ade/krad/internal/termsafe"
)

// A push sends a group's branch to the repository's remote with the git of the environment, where
// the repository is: its credentials are the person's (a credential helper, ssh-agent), and what
// git must ask goes through the askpass the app gives its own gits (WithPrompts), to the person in
// the app's UI, never to a terminal (git runs without one). A pull request is then opened with
// GitHub's CLI, gh, where it is installed. Every name reaches git and gh as data: git's after
// --end-of-options and as a full refs/heads/ refspec, gh's as --flag=value words of its argv.

// PushOptions are what OpPush takes.
type PushOptions struct {
	Group string `json:"group"`
	// Remote is the remote to push to; "": the main checkout's branch's remote, else origin,
	// else the repository's only remote.
	Remote string `json:"remote,omitempty"`
	// PR, when set, opens a pull request once the branch is pushed.
	PR *PROptions `json:"pr,omitempty"`
}

// PROptions are a pull request's: its title ("" lets gh take the commits', --fill), and whether
// it is a draft.
type PROptions struct {
	Title string `json:"title,omitempty"`
	Draft bool   `json:"draft,omitempty"`
}

// Pushed is what a push did.
type Pushed struct {
	Group  string `json:"group"`
	Branch string `json:"branch"`
	Remote string `json:"remote"`
	// Commit is the branch's tip that was pushed; UpToDate says the remote had it already.
	Commit   string `json:"commit"`
	UpToDate bool   `json:"up_to_date,omitempty"`
	// Uncommitted counts the files of the checkout not committed, which a push does not send.
	Uncommitted int `json:"uncommitted,omitempty"`
	// PR is the pull request's address, when one was opened; Base the branch it is into.
	PR   string `json:"pr,omitempty"`
	Base string `json:"base,omitempty"`
}

// GHInstallHint says how to get gh, for the unavailable answer where it is missing.
const GHInstallHint = "install GitHub's CLI, gh (https://cli.github.com; Debian and Ubuntu: apt-get install gh), then run gh auth login there"

// urlUser matches the user part of a URL (user:password@, or a token@), which git may print in
// an error and which must not reach a message.
var urlUser = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@`)

// redactURLs is s without the user parts of the URLs in it.
func redactURLs(s string) string { return urlUser.ReplaceAllString(s, "${1}…@") }

// Push pushes group o.Group's branch to the remote, and opens a pull request when o.PR asks.
func (r *Repo) Push(ctx context.Context, o PushOptions) (Pushed, error) {
	g, err := r.group(ctx, o.Group)
	if err != nil {
		return Pushed{}, err
	}
	remote, err := r.pushRemote(ctx, o.Remote)
	if err != nil {
		return Pushed{}, err
	}
	gh := ""
	if o.PR != nil {
		// Before anything is pushed: a pull request that cannot be opened changes nothing.
		if gh, err = exec.LookPath("gh"); err != nil {
			host, _ := os.Hostname()
			return Pushed{}, api.Errorf(api.CodeUnavailable, "a pull request is opened with gh, GitHub's CLI, which is not installed where the repository is (%s, host %s): %s; or push the branch alone (krad push %s) and open the pull request yourself; nothing was pushed",
				termsafe.Quote(r.Top), termsafe.QuoteMax(host, 100), GHInstallHint, g.Name)
		}
	}
	ref := "refs/heads/" + g.Branch
	tip, err := r.resolve(ctx, ref)
	if err != nil {
		return Pushed{}, fmt.Errorf("push group %s: its branch %s: %w", g.Name, g.Branch, err)
	}
	p := Pushed{Group: g.Name, Branch: g.Branch, Remote: remote, Commit: tip}
	if !g.Missing {
		if files, err := uncommitted(ctx, g.Dir); err == nil {
			p.Uncommitted = len(files)
		}
	}
	out, err := git(ctx, gitRun{dir: r.Top, write: true, detach: true}, "push", "--porcelain", "--end-of-options", remote, ref+":"+ref)
	if err != nil {
		return Pushed{}, pushFailed(g, remote, string(out), err)
	}
	p.UpToDate = strings.Contains(string(out), "\n=\t") || strings.HasPrefix(string(out), "=\t")
	if o.PR == nil {
		return p, nil
	}
	if out, err := git(ctx, gitRun{dir: r.Top}, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		p.Base = strings.TrimSpace(string(out))
	}
	if p.PR, err = r.openPR(ctx, gh, g, p.Base, *o.PR); err != nil {
		return Pushed{}, err
	}
	return p, nil
}

// pushFailed is git push's error, its URLs' users removed, with what to do: a branch on the
// remote that has commits of its own is a conflict; one that git could not sign in for is
// unavailable. stdout is what git push --porcelain printed: a ref it refused is a line of its.
func pushFailed(g Group, remote, stdout string, err error) error {
	msg := redactURLs(err.Error())
	switch {
	case strings.Contains(stdout, "[rejected]") || strings.Contains(msg, "Updates were rejected"):
		return api.Errorf(api.CodeConflict, "push group %s: the remote %s's %s has commits this one lacks (someone pushed to it, or the group was rebased since it was pushed); nothing was pushed: bring them into the group (git -C %s pull %s %s), then push again; git said: %s",
			g.Name, termsafe.Quote(remote), g.Branch, termsafe.Quote(g.Dir), termsafe.Quote(remote), g.Branch, msg).WithCause(ErrConflict)
	case strings.Contains(msg, "Authentication failed") || strings.Contains(msg, "could not read Username") || strings.Contains(msg, "could not read Password") ||
		strings.Contains(msg, "Permission denied") || strings.Contains(msg, "terminal prompts disabled") || strings.Contains(msg, "Host key verification failed"):
		return api.Errorf(api.CodeUnavailable, "push group %s: git could not sign in to the remote %s: answer its prompt in krad-ade's UI (a headless app cannot ask you), or let git find the credential itself (a credential helper, ssh-agent; an SSH host's key in known_hosts); git said: %s",
			g.Name, termsafe.Quote(remote), msg)
	}
	return api.Errorf(api.CodeInternal, "push group %s to %s: %s", g.Name, termsafe.Quote(remote), msg).WithCause(errors.Unwrap(err))
}

// pushRemote is the remote to push to: name, which must be one of the repository's; or the main
// checkout's branch's remote, else origin, else the only remote.
func (r *Repo) pushRemote(ctx context.Context, name string) (string, error) {
	out, err := git(ctx, gitRun{dir: r.Top}, "remote")
	if err != nil {
		return "", fmt.Errorf("list the repository's remotes: %w", err)
	}
	remotes := strings.Fields(string(out))
	has := func(n string) bool {
		for _, r := range remotes {
			if r == n {
				return true
			}
		}
		return false
	}
	switch {
	case name != "" && has(name):
		return name, nil
	case name != "":
		return "", api.Errorf(api.CodeNotFound, "the repository %s has no remote %s (its remotes: %s): see git remote -v", termsafe.Quote(r.Top), termsafe.QuoteMax(name, 60), remoteNames(remotes))
	case len(remotes) == 0:
		return "", api.Errorf(api.CodeConflict, "the repository %s has no remote to push to: add one (git remote add origin URL)", termsafe.Quote(r.Top))
	}
	if branch, err := git(ctx, gitRun{dir: r.Top}, "symbolic-ref", "-q", "--short", "HEAD"); err == nil {
		if up, err := git(ctx, gitRun{dir: r.Top}, "config", "--get", "--end-of-options", "branch."+strings.TrimSpace(string(branch))+".remote"); err == nil && has(strings.TrimSpace(string(up))) {
			return strings.TrimSpace(string(up)), nil
		}
	}
	if has("origin") {
		return "origin", nil
	}
	if len(remotes) == 1 {
		return remotes[0], nil
	}
	return "", api.Errorf(api.CodeBadRequest, "the repository %s has several remotes (%s) and none is origin or the main checkout's branch's: name one (--remote)", termsafe.Quote(r.Top), remoteNames(remotes))
}

func remoteNames(remotes []string) string {
	if len(remotes) == 0 {
		return "none"
	}
	q := make([]string, len(remotes))
	for i, r := range remotes {
		q[i] = termsafe.QuoteMax(r, 60)
	}
	return strings.Join(q, ", ")
}

// openPR opens the pull request of g's branch into base ("" the remote's default branch) with gh,
// in the group's checkout, and returns its address.
func (r *Repo) openPR(ctx context.Context, gh string, g Group, base string, o PROptions) (string, error) {
	args := []string{"pr", "create", "--head=" + g.Branch}
	if base != "" {
		args = append(args, "--base="+base)
	}
	if o.Title != "" {
		body := "From krad-ade's group " + g.Name + "."
		if base != "" {
			if out, err := git(ctx, gitRun{dir: r.Top}, "log", "--max-count=50", "--format=- %s", "--end-of-options", "refs/heads/"+base+"..refs/heads/"+g.Branch); err == nil && len(out) > 0 {
				body = string(out) + "\n" + body
			}
		}
		args = append(args, "--title="+o.Title, "--body="+body)
	} else {
		args = append(args, "--fill")
	}
	if o.Draft {
		args = append(args, "--draft")
	}
	dir := g.Dir
	if g.Missing {
		dir = r.Top
	}
	cmd := exec.CommandContext(ctx, gh, args...)
	cmd.Dir = dir
	cmd.Env = append(append(baseEnv(), "GH_PROMPT_DISABLED=1", "GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1"), promptEnv(ctx)...)
	detach(cmd)
	stdout, stderr := capped.First(64<<10), capped.Last(8192)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		said := termsafe.Escape(lastLines(redactURLs(strings.TrimSpace(stderr.String())), 600), 800)
		code := api.CodeUnavailable
		if strings.Contains(said, "already exists") {
			code = api.CodeConflict
		}
		return "", api.Errorf(code, "group %s's branch %s is pushed, but gh pr create failed (%v): %s", g.Name, g.Branch, err, said)
	}
	url := ""
	for l := range strings.SplitSeq(stdout.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
			url = l
		}
	}
	if url == "" {
		return "", api.Errorf(api.CodeInternal, "group %s's branch %s is pushed, and gh pr create printed no address: see gh pr list", g.Name, g.Branch)
	}
	return termsafe.Escape(redactURLs(url), 500), nil
}
