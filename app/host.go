package app

import (
	"context"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/tmux"
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
}

func (h *localHost) Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error) {
	return h.tmux.attach(ctx, session, onNote)
}

func (h *localHost) Vars() HostVars                   { return h.vars }
func (h *localHost) AttachHint(session string) string { return h.tmux.attachHint(session) }
