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
	// called for every notification, with the client once Attach has returned it.
	Attach(ctx context.Context, session string, onNote func(*tmux.Client, tmux.Notification)) (*tmux.Client, error)
	// Vars is what every terminal on the host gets, as of the last Attach.
	Vars() HostVars
	// AttachHint is the command a person runs to see the session's terminals.
	AttachHint(session string) string
}

// HostVars are the variables terminals on a host get, besides KRAD_ADE_TERMINAL.
type HostVars struct {
	// Endpoint is KRAD_ADE_ENDPOINT: the bus, or its forward on the host.
	Endpoint string
	// Token is KRAD_ADE_TOKEN, set on this computer only.
	Token api.Token
	// TokenFile is KRAD_ADE_TOKEN_FILE, the owner-only file with the token, which krad reads
	// before KRAD_ADE_TOKEN: on SSH hosts instead of the token, on this computer beside it. The
	// app rewrites the file, at the same path, each time it starts (and connects), so terminals
	// that outlive a run read the token of the next.
	TokenFile string
	// BinDir is where krad and krad-ade-agents are on the host: first on PATH.
	BinDir string
	// Path is the rest of PATH.
	Path string
	// Dir is the terminals' working folder, "" for tmux's default.
	Dir string
}

// path is the PATH terminals get.
func (v HostVars) path() string {
	if v.Path == "" {
		return v.BinDir
	}
	return v.BinDir + ":" + v.Path
}

// companion is krad-ade-agents on the host.
func (v HostVars) companion() string { return v.BinDir + "/krad-ade-agents" }

// env is the variables as NAME=VALUE, for new-window -e: the token, its file, or both.
func (v HostVars) env(terminal api.TerminalID) []string {
	vars := []string{"KRAD_ADE_ENDPOINT=" + v.Endpoint}
	if !v.Token.IsZero() {
		vars = append(vars, "KRAD_ADE_TOKEN="+v.Token.Reveal())
	}
	if v.TokenFile != "" {
		vars = append(vars, "KRAD_ADE_TOKEN_FILE="+v.TokenFile)
	}
	return append(vars, "KRAD_ADE_TERMINAL="+terminal.String(), "PATH="+v.path())
}

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
