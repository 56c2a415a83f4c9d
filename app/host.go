package app

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
	"github.com/krad-ade/krad/worktree"
)

// Host is where an environment's tmux server runs: this computer, or an SSH host through the
// bridge. The app drives both the same way; a Host says how to reach tmux there and what the
// terminals there are given.
type Host interface {
	// Attach starts a tmux control client attached to session, creating the session (its first
	// window named HolderName, running a command that waits) when it does not exist. onNote is
	// called for every notification, with the client that read it: the one Attach returns, from
	// the first notification on (tmux.Attach).
	Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error)
	// Vars is what every terminal on the host gets, as of the last Attach.
	Vars() HostVars
	// AttachHint is the command a person runs to see the session's terminals.
	AttachHint(session string) string
	// Worktree runs a group operation where the environment's repository is: it sets op's Dir
	// (the environment's folder) and Root (the host's worktrees root), and runs it with
	// worktree.Do, in this process for this computer, through the static krad for an SSH host.
	// The error is the way there failing (the host is not connected, say); what the operation
	// itself answers, its errors included, is the Result.
	Worktree(ctx context.Context, op worktree.Op) (worktree.Result, error)
	// MayHaveGroups is false when the host's worktrees root was empty at the last connect: it
	// had no groups then, so an attach right after finds none to retire there and need not ask
	// (through the static krad, an exec of krad and git on every host at every reconnect, a
	// laptop's wake).
	MayHaveGroups() bool
}

// LinkedHost is a Host reached through a link of its own that can fail apart from tmux: an SSH
// connection. When the host's tmux stops answering (an error wrapping tmux.ErrNoAnswer), or its
// stream ends without tmux's %exit (io.ErrUnexpectedEOF), the app asks Stalled why: the link may
// be what went silent or dropped, and a person must be told which, and what the app does about
// it. Stalled returns the error to report in its place, wrapping err.
type LinkedHost interface {
	Host
	Stalled(ctx context.Context, err error) error
}

// HostVars are what the terminals on a host get: the variables of the spec, built once for the
// terminals of this computer and those of SSH hosts alike (api.TerminalVars: on a host, the token
// file and no token), and the folder they start in.
type HostVars struct {
	api.TerminalVars
	// Dir is the terminals' working folder, "" for tmux's default.
	Dir string
}

// companion is krad-ade-agents on the host.
func (v HostVars) companion() string { return v.BinDir + "/krad-ade-agents" }

// localHost is this computer: a tmux server of the app's own, reached as a local process.
type localHost struct {
	tmux TmuxConfig
	vars HostVars
	// dir is the environment's folder (where the app runs, unless configured) and root the
	// worktrees root, absolute.
	dir, root string
}

func (h *localHost) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	return h.tmux.attach(ctx, session, onNote)
}

// Worktree runs op in this process. A prompt of its gits (a credential a filter needs during a
// checkout) goes to the person as the Git caller of main, terminal 0, when the terminals get
// GIT_ASKPASS too (api.TerminalVars.AppGitEnv).
func (h *localHost) Worktree(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	op.Dir, op.Root = h.dir, h.root
	key, err := api.ParseToken(op.AskpassKey)
	if err != nil {
		key = api.Token{} // the app's own gits then cannot prompt
	}
	return worktree.Do(worktree.WithPrompts(ctx, h.vars.AppGitEnv(Local, key)), op), nil
}

func (h *localHost) Vars() HostVars                   { return h.vars }
func (h *localHost) MayHaveGroups() bool              { return true } // asked in this process
func (h *localHost) AttachHint(session string) string { return h.tmux.attachHint(session) }

// DefaultWorktreeRoot is where this computer's groups are checked out when the config names no
// folder: $XDG_DATA_HOME/krad-ade/worktrees, else ~/.local/share/krad-ade/worktrees. Not in a
// temporary folder, which the system purges, nor in the repository, where watchers and test
// runners would see them. On macOS too: the place a Mac keeps an app's data, ~/Library/Application
// Support, has a space in its name, and the agents build and test in these checkouts, where make,
// autotools and Bazel, among others, break on a path with a space.
func DefaultWorktreeRoot(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "krad-ade", "worktrees"), nil
	}
	home := getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", errors.New("neither XDG_DATA_HOME nor HOME is an absolute path, so the app has no folder for groups' checkouts")
	}
	return filepath.Join(home, ".local", "share", "krad-ade", "worktrees"), nil
}
