package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/worktree"
)

// pushCommand is `krad push G`: PushGroup.
func pushCommand() *command {
	var remote string
	return &command{
		name:    "push",
		args:    "G [--remote R] [--json]",
		summary: "push group G's branch to the repository's remote (a lead's)",
		json:    `print {"group","branch","remote","commit",…}`,
		help: `
Pushes group G's branch (krad/G) to the repository's remote: R, else the main checkout's
branch's remote, else origin, else the only one. The push is made by the git of the environment
where the repository is, with your credentials there: a credential helper or ssh-agent answers
first, and what git must ask (a password) is asked of you in krad-ade's UI, never in a terminal.
What the group has not committed is not pushed, and krad says how many files. A remote branch
with commits the group lacks is refused (conflict): nothing is forced.

Only a session's lead pushes (or you, with p on a group's agent in krad-ade's UI).`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&remote, "remote", "", "push to remote `R`")
		},
		run: func(x *invocation, args []string) error {
			return x.push(args, &api.PushGroupBody{Remote: remote})
		},
	}
}

// prCommand is `krad pr G`: PushGroup with a pull request.
func prCommand() *command {
	var remote, title string
	var draft bool
	return &command{
		name:    "pr",
		args:    "G [--title T] [--draft] [--remote R] [--json]",
		summary: "push group G's branch and open a pull request for it (a lead's)",
		json:    `print {"group","branch","remote","commit","pr",…}`,
		help: `
Pushes group G's branch as krad push does, then opens a pull request for it into the main
checkout's branch with GitHub's CLI, gh pr create, where the repository is (its own login: gh
auth login there). Without --title, gh takes the title and body from the commits (--fill).
Where gh is not installed, nothing is pushed, and the answer (unavailable) says how to install
it. It prints the pull request's address.

Only a session's lead opens one (or you, with P on a group's agent in krad-ade's UI).`,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&title, "title", "", "the pull request's title `T` (one line)")
			fs.BoolVar(&draft, "draft", false, "open it as a draft")
			fs.StringVar(&remote, "remote", "", "push to remote `R`")
		},
		run: func(x *invocation, args []string) error {
			return x.push(args, &api.PushGroupBody{Remote: remote, PR: true, Title: title, Draft: draft})
		},
	}
}

// push makes the PushGroup of body for the group args names, and prints what it did.
func (x *invocation) push(args []string, body *api.PushGroupBody) error {
	if len(args) != 1 {
		return x.usageError("%s takes one group name", x.path)
	}
	if err := worktree.ValidName(args[0]); err != nil {
		return x.usageError("%v", err)
	}
	if err := api.CheckText("--title", body.Title, api.MaxPRTitle); err != nil {
		return x.usageError("%v", err)
	}
	body.Group = args[0]
	b, err := x.bus()
	if err != nil {
		return err
	}
	var p worktree.Pushed
	raw, err := b.answer(x.ctx, api.NewRequest(api.PushGroup, body), &p)
	if err != nil {
		return err
	}
	if x.json {
		return writeRaw(x.stdout, raw)
	}
	x.notePushed(p)
	return writeLine(x.stdout, pushedLine(p))
}

// notePushed warns, on stderr, of the files a push did not send.
func (x *invocation) notePushed(p worktree.Pushed) {
	if p.Uncommitted > 0 {
		x.warn("group %s has %d %s not committed, which the push did not send: commit them, then push again", p.Group, p.Uncommitted, plural(p.Uncommitted, "file", "files"))
	}
}

// pushedLine says what a PushGroup did.
func pushedLine(p worktree.Pushed) string {
	line := fmt.Sprintf("pushed %s (%s) to %s", termsafe.Escape(p.Branch, 200), short(p.Commit), termsafe.Escape(p.Remote, 200))
	if p.UpToDate {
		line = fmt.Sprintf("%s (%s) is on %s already", termsafe.Escape(p.Branch, 200), short(p.Commit), termsafe.Escape(p.Remote, 200))
	}
	if p.PR != "" {
		line += "; pull request " + termsafe.Escape(p.PR, 500)
	}
	return line
}
